// Drives the NovaOS tool gateway (/mcp/v1) with the official TypeScript
// SDK's client, @modelcontextprotocol/sdk 1.32.2, authenticating as MCP
// clients do: it starts with no token, and its OAuth client-credentials
// provider (ClientCredentialsProvider, client/auth-extensions.js) follows
// the gateway's 401 to the protected-resource metadata (RFC 9728), the
// authorization server's metadata (RFC 8414) and its token endpoint, then
// retries. The client's secret is a platform token.
//
//   NOVAOS_CLIENT_SECRET=… node mcp_gateway_client.mjs <gateway URL> <issuer URL> <webhook URL>
//
// It prints a JSON report on stdout: one entry per step, with its result
// or the error the SDK raised, and every HTTP exchange the SDK made
// (method, path, status, the WWW-Authenticate challenge and, for the token
// endpoint, the grant and scope asked for and the error answered), never
// a header or body that carries a credential. The secret comes from the
// environment, not the command line, which other processes can read. The
// Go test in ../toolgw_clients_test.go asserts the report.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, issuer, hook] = process.argv.slice(2);
const secret = process.env.NOVAOS_CLIENT_SECRET;
if (!url || !issuer || !hook || !secret) {
  console.error('usage: NOVAOS_CLIENT_SECRET=… node mcp_gateway_client.mjs <gateway URL> <issuer URL> <webhook URL>');
  process.exit(2);
}

const report = { sdk: '@modelcontextprotocol/sdk@1.32.2', steps: [], http: [] };

// logged records what the SDK sent and got, without credentials: the
// token request's form is read for its grant type and scope only.
async function logged(input, init) {
  const req = new Request(input, init);
  const entry = { method: req.method, path: new URL(req.url).pathname, bearer: req.headers.has('authorization') && /^Bearer /i.test(req.headers.get('authorization')) };
  if (entry.path.endsWith('/oauth/token')) {
    const form = new URLSearchParams(await req.clone().text());
    entry.grant_type = form.get('grant_type');
    entry.scope = form.get('scope');
    entry.resource = form.get('resource');
    entry.basic = /^Basic /i.test(req.headers.get('authorization') ?? '');
  }
  const res = await fetch(req);
  entry.status = res.status;
  const challenge = res.headers.get('www-authenticate');
  if (challenge) {
    entry.challenge = challenge;
  }
  if (!res.ok) {
    // An OAuth error ({error, error_description}) or a JSON-RPC one
    // ({error: {code, message, data}}); neither carries a credential.
    entry.error = (await res.clone().json().catch(() => ({}))).error ?? null;
  }
  report.http.push(entry);
  return res;
}

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

const provider = new ClientCredentialsProvider({ clientId: 'novaos-interop', clientSecret: secret, expectedIssuer: issuer });
const client = new Client({ name: 'novaos-interop', version: '0.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: logged });

await step('connect', async () => {
  await client.connect(transport);
  return { protocolVersion: transport.protocolVersion ?? null, server: client.getServerVersion() ?? null };
});
await step('token', async () => {
  const t = provider.tokens();
  return { token_type: t?.token_type ?? null, scope: t?.scope ?? null, expires_in: t?.expires_in ?? null, present: Boolean(t?.access_token) };
});
await step('listTools', async () => {
  const { tools } = await client.listTools();
  return tools.map((t) => t.name);
});
await step('write', () =>
  client.callTool({ name: 'novaos.memory.write', arguments: { scope: 'run', content: 'The deploy window is Tuesday mornings.' } }),
);
await step('query', () =>
  client.callTool({ name: 'novaos.memory.query', arguments: { scope: 'run', query: 'deploy window' } }),
);
// The token lacks this tool's scope: the gateway answers 403
// insufficient_scope naming it, the SDK asks the token endpoint for that
// scope (step-up). SDK 1.32.2's client-credentials provider asks for its
// configured scope, not the challenged one, so the token it gets is the
// same and the retry is refused again: the call fails with the 403.
const beforeRefused = report.http.length;
await step('refused', () =>
  client.callTool({ name: 'novaos.notify.webhook', arguments: { url: hook, payload: { text: 'x' } } }),
);
report.refusedHTTP = report.http.slice(beforeRefused);
await step('close', () => client.close());

process.stdout.write(JSON.stringify(report, null, 2) + '\n');
