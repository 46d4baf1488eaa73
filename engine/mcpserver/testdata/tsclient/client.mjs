// One assistant turn through the official MCP TypeScript SDK client, for
// engine/mcpserver's TestTypeScriptClient: connect over streamable HTTP,
// call one tool, print {"result", "elicitations"} as JSON on stdout.
//
//   node client.mjs URL TOKEN MODE TOOL ARGS_JSON
//
// MODE: "accept" or "decline" (the client declares form-mode elicitation
// and its user answers so), or "none" (no elicitation capability).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, token, mode, tool, argsJSON] = process.argv.slice(2);
const capabilities = mode === 'none' ? {} : { elicitation: { form: {} } };
const client = new Client({ name: 'pilothouse-ts-test', version: '1.0.0' }, { capabilities });
const elicitations = [];
if (mode !== 'none') {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicitations.push(req.params);
    return mode === 'accept' ? { action: 'accept', content: {} } : { action: 'decline' };
  });
}
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
try {
  await client.connect(transport);
  const result = await client.callTool({ name: tool, arguments: JSON.parse(argsJSON) });
  process.stdout.write(JSON.stringify({ result, elicitations }) + '\n');
} finally {
  await client.close();
}
