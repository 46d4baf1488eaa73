package web

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"sync"
)

// editorBundle serves web/static/editor.js, the editor's CodeMirror
// bundle, gzipped when the browser accepts it: the generic static handler
// does not compress, and this file is a third of its size gzipped.
func (s *server) editorBundle() http.Handler {
	var once sync.Once
	var plain, packed []byte
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			plain, _ = staticFS.ReadFile("static/editor.js")
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			_, _ = zw.Write(plain)
			_ = zw.Close()
			packed = buf.Bytes()
		})
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("Cache-Control", "public, max-age=300")
		h.Add("Vary", "Accept-Encoding")
		body := plain
		if acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
			body = packed
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	})
}
