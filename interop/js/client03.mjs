// Drives an agent with the @a2a-js/sdk 0.3.14 client (the npm alias
// a2a-js-03), an A2A 0.3 client, and prints a JSON report on stdout: one
// entry per step, with the result as the SDK returned it (0.3 wire JSON:
// kind discriminators, lowercase states) or the error it raised.
//
//   node client03.mjs http://127.0.0.1:PORT
//
// The client is made the way a 0.3 application makes it: ClientFactory
// reads /.well-known/agent-card.json and picks the card's url and
// preferredTransport. Should that fail, the report says so (step
// createFromUrl) and the remaining steps run through a JSON-RPC transport
// on the base URL, so one run shows every method. The agent must behave as
// the suite's agents do (see ../README.md): "message" replies with a
// message, "slow" works until cancelled, "ask" waits for input, anything
// else is echoed as an artifact. The Go test in ../jsclient03_test.go
// asserts the report.

import { ClientFactory, JsonRpcTransport, Client } from 'a2a-js-03/client';
import { randomUUID } from 'node:crypto';

const [baseUrl] = process.argv.slice(2);
if (!baseUrl) {
  console.error('usage: node client03.mjs <agent base URL>');
  process.exit(2);
}

const STEP_TIMEOUT_MS = 15000;
const report = { sdk: '@a2a-js/sdk@0.3.14', baseUrl, steps: [] };

function describeError(err) {
  // Unary errors keep the JSON-RPC response; stream errors only say the
  // code in their message.
  const rpc = err?.errorResponse?.error;
  let code = rpc?.code ?? null;
  if (code === null) {
    const m = /\(Code: (-?\d+)\)/.exec(String(err?.message ?? ''));
    if (m) code = Number(m[1]);
  }
  return { name: err?.name ?? 'Error', code, message: String(rpc?.message ?? err?.message ?? err) };
}

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function step(name, fn) {
  try {
    const result = await withTimeout(fn(), name);
    report.steps.push({ name, ok: true, result: result ?? null });
    return result;
  } catch (err) {
    report.steps.push({ name, ok: false, error: describeError(err) });
    return undefined;
  }
}

function message(text, extra = {}) {
  return { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }], ...extra };
}

async function collect(stream, limit = 50) {
  const events = [];
  for await (const ev of stream) {
    events.push(ev);
    if (events.length >= limit) break;
  }
  return events;
}

let client = await step('createFromUrl', async () => {
  const c = await new ClientFactory().createFromUrl(baseUrl);
  return { card: await c.getAgentCard() };
}).then(async (ok) => (ok ? new ClientFactory().createFromUrl(baseUrl) : undefined));

if (!client) {
  // The card did not lead to a 0.3 JSON-RPC endpoint; still exercise the
  // methods at the base URL.
  const card = { name: 'unknown', url: baseUrl, preferredTransport: 'JSONRPC', capabilities: { streaming: true, pushNotifications: true } };
  client = new Client(new JsonRpcTransport({ endpoint: baseUrl }), card);
}

const sent = await step('sendMessage', () => client.sendMessage({ message: message('hello') }));
await step('sendMessageReply', () => client.sendMessage({ message: message('message') }));
await step('sendMessageStream', () => collect(client.sendMessageStream({ message: message('stream me') })));

if (sent?.kind === 'task') {
  await step('getTask', () => client.getTask({ id: sent.id, historyLength: 1 }));
  await step('cancelCompletedTask', () => client.cancelTask({ id: sent.id }));
  await step('sendToTerminalTask', () => client.sendMessage({ message: message('more', { taskId: sent.id, contextId: sent.contextId }) }));
  await step('resubscribeTerminalTask', () => collect(client.resubscribeTask({ id: sent.id })));

  await step('setPushConfig', () => client.setTaskPushNotificationConfig({
    taskId: sent.id,
    pushNotificationConfig: { url: 'https://hooks.example.com/a2a', token: 'tok-03', authentication: { schemes: ['Bearer'] } },
  }));
  await step('setPushConfigWithId', () => client.setTaskPushNotificationConfig({
    taskId: sent.id, pushNotificationConfig: { id: 'cfg-2', url: 'https://hooks.example.com/two' },
  }));
  await step('getPushConfigByTask', () => client.getTaskPushNotificationConfig({ id: sent.id }));
  await step('getPushConfig', () => client.getTaskPushNotificationConfig({ id: sent.id, pushNotificationConfigId: 'cfg-2' }));
  await step('listPushConfigs', () => client.listTaskPushNotificationConfig({ id: sent.id }));
  await step('deletePushConfig', async () => {
    await client.deleteTaskPushNotificationConfig({ id: sent.id, pushNotificationConfigId: 'cfg-2' });
    return null;
  });
}

const asked = await step('askInput', () => client.sendMessage({ message: message('ask') }));
if (asked?.kind === 'task') {
  await step('answerInput', () => client.sendMessage({ message: message('42', { taskId: asked.id, contextId: asked.contextId }) }));
}
await step('askInputStream', () => collect(client.sendMessageStream({ message: message('ask') })));

await step('sendParts', () => client.sendMessage({
  message: {
    kind: 'message', messageId: randomUUID(), role: 'user',
    parts: [
      { kind: 'text', text: 'parts' },
      { kind: 'text', text: 'hi', metadata: { m: '1' } },
      { kind: 'file', file: { bytes: 'aGVsbG8=', mimeType: 'text/plain', name: 'h.txt' } },
      { kind: 'file', file: { uri: 'https://files.example.com/a.pdf', mimeType: 'application/pdf' } },
      { kind: 'data', data: { k: 'v', n: [1, 2] } },
    ],
  },
}));

await step('getUnknownTask', () => client.getTask({ id: 'no-such-task' }));

const slow = await step('sendSlowNonBlocking', () => client.sendMessage({ message: message('slow'), configuration: { blocking: false } }));
if (slow?.kind === 'task') {
  await step('resubscribeAndCancel', async () => {
    const events = [];
    let canceled;
    for await (const ev of client.resubscribeTask({ id: slow.id })) {
      events.push(ev);
      if (events.length === 1) {
        canceled = await client.cancelTask({ id: slow.id });
      }
      if (events.length >= 50) break;
    }
    return { events, canceled };
  });
}

process.stdout.write(JSON.stringify(report, null, 2) + '\n');
