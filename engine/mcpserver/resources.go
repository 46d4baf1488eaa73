package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// addResources registers the manifest and one concrete resource per guide
// (not a template: mcp-go turns a template's not-found into -32603).
func (s *Server) addResources() {
	s.MCP.AddResource(mcp.NewResource(pilotage.ManifestURI, "Pilotage manifest",
		mcp.WithResourceDescription("The Pilotage 1.1 manifest of this server (same as pilotage_discover)."),
		mcp.WithMIMEType("application/json")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			b, err := json.Marshal(s.e.Manifest())
			if err != nil {
				return nil, err
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: pilotage.ManifestURI, MIMEType: "application/json", Text: string(b)}}, nil
		})
	for _, g := range s.e.Guides() {
		g := g
		uri := pilotage.GuidesURIPrefix + rules.Language + "/" + g.ID
		s.MCP.AddResource(mcp.NewResource(uri, g.Title,
			mcp.WithResourceDescription(g.Summary), mcp.WithMIMEType("text/markdown")),
			func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/markdown", Text: g.Body}}, nil
			})
	}
}
