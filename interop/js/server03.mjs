// Serves the suite's echo agent with the @a2a-js/sdk 0.3.14 server (the
// npm alias a2a-js-03; Express 5, JSON-RPC binding, in-memory stores) on
// 127.0.0.1 and an ephemeral port: an A2A 0.3 peer. When listening it
// prints one JSON line, {"url": "http://127.0.0.1:PORT"}, and runs until
// killed. The Go tests in ../jsserver03_test.go read its raw output with
// the a2av03 wire model.
//
// The agent behaves like server.mjs: "message" replies with a message,
// "slow" works until cancelled, "ask" waits for input (the next message on
// the task completes it with "answer: <text>"), a message whose first part
// is the text "parts" gets its other parts back as an artifact, anything
// else is echoed as an artifact and completes with a "done" status
// message. In 0.3 the SDK's objects are the wire JSON itself (kind
// discriminators, lowercase states), so events are written as plain
// objects.

import express from 'express';
import { randomUUID } from 'node:crypto';
import {
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from 'a2a-js-03/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from 'a2a-js-03/server/express';

const now = () => new Date().toISOString();

function textOf(message) {
  return (message?.parts ?? []).map((p) => (p.kind === 'text' ? p.text : '')).join('');
}

function agentMessage(text, taskId, contextId) {
  return { kind: 'message', messageId: randomUUID(), role: 'agent', parts: [{ kind: 'text', text }], taskId, contextId };
}

function statusUpdate(taskId, contextId, state, message, final) {
  return {
    kind: 'status-update', taskId, contextId, final,
    status: { state, timestamp: now(), ...(message ? { message } : {}) },
  };
}

function artifactUpdate(taskId, contextId, parts) {
  return { kind: 'artifact-update', taskId, contextId, lastChunk: true, artifact: { artifactId: randomUUID(), parts } };
}

function newTask(taskId, contextId, userMessage) {
  return { kind: 'task', id: taskId, contextId, status: { state: 'submitted', timestamp: now() }, history: [userMessage] };
}

class EchoExecutor {
  // Resolvers of the "slow" executions waiting for cancelTask, by task id.
  waiting = new Map();

  async execute(ctx, bus) {
    const { taskId, contextId, userMessage, task } = ctx;
    const parts = userMessage.parts ?? [];
    const text = textOf(userMessage);
    if (parts.length > 1 && parts[0].kind === 'text' && parts[0].text === 'parts') {
      bus.publish(newTask(taskId, contextId, userMessage));
      bus.publish(artifactUpdate(taskId, contextId, parts.slice(1)));
      bus.publish(statusUpdate(taskId, contextId, 'completed', undefined, true));
      bus.finished();
      return;
    }
    if (task && task.status?.state === 'input-required') {
      bus.publish(task);
      bus.publish(artifactUpdate(taskId, contextId, [{ kind: 'text', text: `answer: ${text}` }]));
      bus.publish(statusUpdate(taskId, contextId, 'completed', undefined, true));
      bus.finished();
      return;
    }
    if (text === 'ask') {
      bus.publish(newTask(taskId, contextId, userMessage));
      bus.publish(statusUpdate(taskId, contextId, 'input-required', agentMessage('what number?', taskId, contextId), true));
      bus.finished();
      return;
    }
    if (text === 'message') {
      bus.publish({ kind: 'message', messageId: randomUUID(), role: 'agent', contextId, parts: [{ kind: 'text', text: 'echo: message' }] });
      bus.finished();
      return;
    }
    bus.publish(task ?? newTask(taskId, contextId, userMessage));
    bus.publish(statusUpdate(taskId, contextId, 'working', undefined, false));
    if (text === 'slow') {
      await new Promise((resolve) => this.waiting.set(taskId, { resolve, contextId }));
      return;
    }
    bus.publish(artifactUpdate(taskId, contextId, [{ kind: 'text', text: `echo: ${text}` }]));
    bus.publish(statusUpdate(taskId, contextId, 'completed', agentMessage('done', taskId, contextId), true));
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    const w = this.waiting.get(taskId);
    this.waiting.delete(taskId);
    bus.publish(statusUpdate(taskId, w?.contextId ?? '', 'canceled', undefined, true));
    bus.finished();
    w?.resolve();
  }
}

const card = {
  protocolVersion: '0.3.0',
  name: 'a2a-js 0.3 peer',
  description: '@a2a-js/sdk 0.3.14 reference server',
  version: '1.0.0',
  url: 'http://127.0.0.1',
  preferredTransport: 'JSONRPC',
  capabilities: { streaming: true, pushNotifications: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'echoes', tags: ['echo'] }],
};

const pushStore = new InMemoryPushNotificationStore();
const handler = new DefaultRequestHandler(
  card, new InMemoryTaskStore(), new EchoExecutor(), undefined,
  pushStore, new DefaultPushNotificationSender(pushStore),
);

const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const server = app.listen(0, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  // The card must name the address actually bound.
  card.url = url;
  process.stdout.write(JSON.stringify({ url }) + '\n');
});

// Clients keep connections alive, so close them rather than wait.
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
