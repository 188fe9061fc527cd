// Drives an A2A v1.0 server with the @a2a-js/sdk 1.3.0 client and prints a
// JSON report on stdout: one entry per step, with the result converted back
// to wire JSON (ProtoJSON) or the error the SDK raised.
//
//   node client.mjs http://127.0.0.1:PORT
//   node client.mjs http://127.0.0.1:PORT '<JSON array of parts>'
//   A2A_TRANSPORT=HTTP+JSON node client.mjs http://127.0.0.1:PORT
//
// With a second argument it runs one step only, sendParts: a message whose
// first part is the text "parts" followed by the given parts (wire JSON);
// the agent returns those parts as an artifact.
//
// The server's agent must understand three message texts: "message" (reply
// with a message), "slow" (work until cancelled), anything else (echo it as
// an artifact and complete). The Go test in ../jsclient_test.go asserts the
// report.
//
// The SDK's in-memory objects are ts-proto shapes (enum numbers, parts as
// {content: {$case, value}}), not wire JSON. Requests are therefore written
// as wire JSON and converted with the SDK's own fromJSON codecs, and results
// are converted back with toJSON, so the report is plain A2A JSON.

import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import {
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
  AgentCard,
} from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';

const [baseUrl, partsArg] = process.argv.slice(2);
if (!baseUrl) {
  console.error('usage: node client.mjs <agent base URL>');
  process.exit(2);
}

// Every call carries a bearer token; servers that scope tasks by caller
// (a2a-go refuses ListTasks without one) see the same user throughout.
const callOptions = { serviceParameters: { Authorization: 'Bearer interop-js' } };
const STEP_TIMEOUT_MS = 15000;

const report = { sdk: '@a2a-js/sdk@1.3.0', baseUrl, steps: [] };

// The SDK's HTTP+JSON transport raises the same typed errors as its
// JSON-RPC one, but without the JSON-RPC code: the code is the A2A code of
// the error's type.
const codeOfErrorName = {
  TaskNotFoundError: -32001,
  TaskNotCancelableError: -32002,
  PushNotificationNotSupportedError: -32003,
  UnsupportedOperationError: -32004,
  ContentTypeNotSupportedError: -32005,
  InvalidAgentResponseError: -32006,
  ExtendedAgentCardNotConfiguredError: -32007,
  ExtensionSupportRequiredError: -32008,
  VersionNotSupportedError: -32009,
};

function describeError(err) {
  // Errors raised inside a stream wrap the typed error in cause.
  const typed = err?.envelopeCode !== undefined || codeOfErrorName[err?.name] !== undefined ? err : err?.cause;
  return {
    name: typed?.name ?? err?.name ?? 'Error',
    code: typed?.envelopeCode ?? codeOfErrorName[typed?.name] ?? null,
    message: String(err?.message ?? err),
  };
}

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// step runs fn and records its JSON result or its error; it returns the
// result so later steps can use ids from it.
async function step(name, fn) {
  try {
    const result = await withTimeout(fn(), name);
    report.steps.push({ name, ok: true, result });
    return result;
  } catch (err) {
    report.steps.push({ name, ok: false, error: describeError(err) });
    return undefined;
  }
}

function userMessage(text, extra = {}) {
  return { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra };
}

function sendRequest(text, { configuration, ...extra } = {}) {
  return SendMessageRequest.fromJSON({ message: userMessage(text, extra), configuration });
}

// sendResult converts SendMessage's Task | Message union to wire JSON in
// SendMessageResponse form.
function sendResult(value) {
  if (value && 'messageId' in value && !('status' in value)) {
    return { message: Message.toJSON(value) };
  }
  return { task: Task.toJSON(value) };
}

async function collect(stream, limit = 50) {
  const events = [];
  for await (const ev of stream) {
    events.push(StreamResponse.toJSON(ev));
    if (events.length >= limit) break;
  }
  return events;
}

// A2A_TRANSPORT (JSONRPC, HTTP+JSON) makes the client prefer that binding
// among those the card lists; unset, the card's order decides.
const preferred = process.env.A2A_TRANSPORT;
const factory = preferred
  ? new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: [preferred] }))
  : new ClientFactory();

const client = await factory.createFromUrl(baseUrl).catch((err) => {
  report.steps.push({ name: 'createFromUrl', ok: false, error: describeError(err) });
  return undefined;
});

if (client && partsArg) {
  await step('sendParts', async () => {
    const message = { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'parts' }, ...JSON.parse(partsArg)] };
    return sendResult(await client.sendMessage(SendMessageRequest.fromJSON({ message }), callOptions));
  });
} else if (client) {
  report.protocolVersion = client.protocolVersion;
  await step('agentCard', async () => AgentCard.toJSON(await client.getAgentCard(callOptions)));

  const sent = await step('sendMessage', async () => sendResult(await client.sendMessage(sendRequest('hello'), callOptions)));
  const task = sent?.task;

  await step('sendMessageReply', async () => sendResult(await client.sendMessage(sendRequest('message'), callOptions)));

  await step('sendMessageStream', () => collect(client.sendMessageStream(sendRequest('stream me'), callOptions)));

  if (task) {
    await step('getTask', async () =>
      Task.toJSON(await client.getTask(GetTaskRequest.fromJSON({ id: task.id, historyLength: 1 }), callOptions)));

    await step('listTasks', async () =>
      ListTasksResponse.toJSON(await client.listTasks(ListTasksRequest.fromJSON({ contextId: task.contextId, includeArtifacts: true }), callOptions)));

    // A follow-up message in the same context, then list both. The pause
    // keeps the status timestamps (millisecond precision) apart.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await step('sendMessageSameContext', async () =>
      sendResult(await client.sendMessage(sendRequest('again', { contextId: task.contextId }), callOptions)));
    await step('listTasksContext', async () =>
      ListTasksResponse.toJSON(await client.listTasks(ListTasksRequest.fromJSON({ contextId: task.contextId }), callOptions)));

    await step('cancelCompletedTask', async () =>
      Task.toJSON(await client.cancelTask(CancelTaskRequest.fromJSON({ id: task.id }), callOptions)));

    await step('sendToTerminalTask', async () =>
      sendResult(await client.sendMessage(sendRequest('more', { taskId: task.id, contextId: task.contextId }), callOptions)));

    await step('subscribeTerminalTask', () =>
      collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: task.id }), callOptions)));

    const created = await step('createPushConfig', async () =>
      TaskPushNotificationConfig.toJSON(await client.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({ taskId: task.id, url: 'https://hooks.example.com/a2a', token: 'tok-js' }), callOptions)));
    if (created) {
      await step('getPushConfig', async () =>
        TaskPushNotificationConfig.toJSON(await client.getTaskPushNotificationConfig(
          GetTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: created.id }), callOptions)));
      await step('listPushConfigs', async () =>
        ListTaskPushNotificationConfigsResponse.toJSON(await client.listTaskPushNotificationConfig(
          ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id }), callOptions)));
      await step('deletePushConfig', async () => {
        await client.deleteTaskPushNotificationConfig(
          DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: created.id }), callOptions);
        return null;
      });
    }
  }

  // Multi-turn: the agent stops in INPUT_REQUIRED, the answer completes it.
  const asked = await step('askInput', async () => sendResult(await client.sendMessage(sendRequest('ask'), callOptions)));
  if (asked?.task) {
    await step('answerInput', async () => sendResult(await client.sendMessage(
      sendRequest('42', { taskId: asked.task.id, contextId: asked.task.contextId }), callOptions)));
  }
  await step('askInputStream', () => collect(client.sendMessageStream(sendRequest('ask'), callOptions)));

  await step('getUnknownTask', async () =>
    Task.toJSON(await client.getTask(GetTaskRequest.fromJSON({ id: 'no-such-task' }), callOptions)));

  // A long-running task: subscribe, read the snapshot, cancel it from the
  // side, and read the stream to its end.
  const slow = await step('sendSlowReturnImmediately', async () =>
    sendResult(await client.sendMessage(sendRequest('slow', { configuration: { returnImmediately: true } }), callOptions)));
  if (slow?.task) {
    await step('subscribeAndCancel', async () => {
      const stream = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: slow.task.id }), callOptions);
      const events = [];
      let canceled;
      for await (const ev of stream) {
        events.push(StreamResponse.toJSON(ev));
        if (events.length === 1) {
          // Idle long enough for a server's keep-alive comments to arrive
          // (the Go tests run ours with a 50 ms interval).
          await new Promise((resolve) => setTimeout(resolve, 200));
          canceled = Task.toJSON(await client.cancelTask(CancelTaskRequest.fromJSON({ id: slow.task.id }), callOptions));
        }
        if (events.length >= 50) break;
      }
      return { events, canceled };
    });
    await step('getCanceledTask', async () =>
      Task.toJSON(await client.getTask(GetTaskRequest.fromJSON({ id: slow.task.id }), callOptions)));
  }
}

process.stdout.write(JSON.stringify(report, null, 2) + '\n');
