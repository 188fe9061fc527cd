// Drives the NovaOS memory service (MCP over Streamable HTTP) with the
// official TypeScript SDK's client, @modelcontextprotocol/sdk 1.32.2, and
// prints a JSON report on stdout: one entry per step, with its result or
// the error the SDK raised. The SDK validates what it receives: listTools
// parses every tool's input and output schema, and callTool checks a
// tool's structuredContent against its output schema, so a schema a
// strict client cannot read fails a step here.
//
//   NOVAOS_TOKEN=… node mcp_client.mjs http://127.0.0.1:PORT/api/v1/mcp
//
// The token comes from the environment, not the command line, which other
// processes can read. The Go test in ../mcp_test.go asserts the report.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url] = process.argv.slice(2);
const token = process.env.NOVAOS_TOKEN;
if (!url || !token) {
  console.error('usage: NOVAOS_TOKEN=… node mcp_client.mjs <MCP endpoint URL>');
  process.exit(2);
}

const report = { sdk: '@modelcontextprotocol/sdk@1.32.2', steps: [] };

async function step(name, fn) {
  try {
    const result = await fn();
    report.steps.push({ name, ok: true, result });
    return result;
  } catch (err) {
    report.steps.push({
      name,
      ok: false,
      error: { name: err?.name ?? 'Error', code: typeof err?.code === 'number' ? err.code : null, message: String(err?.message ?? err) },
    });
    return undefined;
  }
}

const client = new Client({ name: 'novaos-interop', version: '0.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});

await step('connect', async () => {
  await client.connect(transport);
  return { protocolVersion: transport.protocolVersion ?? null, server: client.getServerVersion() ?? null };
});
await step('listTools', async () => {
  const { tools } = await client.listTools();
  return tools.map((t) => ({ name: t.name, inputType: t.inputSchema?.type, outputType: t.outputSchema?.type }));
});
await step('write', () =>
  client.callTool({ name: 'novaos.memory.write', arguments: { scope: 'run', content: 'The deploy window is Tuesday mornings.' } }),
);
await step('query', () =>
  client.callTool({ name: 'novaos.memory.query', arguments: { scope: 'run', query: 'deploy window' } }),
);
await step('assemble', () =>
  client.callTool({ name: 'novaos.memory.assemble', arguments: { query: 'when is the deploy window?' } }),
);
await step('refused', () =>
  client.callTool({ name: 'novaos.memory.write', arguments: { scope: 'user', content: 'x' } }),
);
await step('close', () => client.close());

process.stdout.write(JSON.stringify(report, null, 2) + '\n');
