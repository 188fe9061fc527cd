// Serves an echo agent with the @a2a-js/sdk 1.3.0 server (Express 5,
// JSON-RPC binding, in-memory stores) on 127.0.0.1 and an ephemeral port.
// When listening it prints one JSON line, {"url": "http://127.0.0.1:PORT"},
// and runs until killed. The Go tests in ../jsserver_test.go read its raw
// output with our wire model.
//
// With the argument "rest" it also serves the HTTP+JSON binding under
// /rest (with the SDK's /{tenant} routes), and its card lists that
// interface first, then JSON-RPC (../client_peers_test.go).
//
// The agent behaves like the Go tests' agents: "message" replies with a
// message, "slow" works until cancelled, "ask" waits for input (the next
// message on the task completes it with "answer: <text>"), a message whose
// first part is the text "parts" gets its other parts back as an artifact,
// anything else is echoed as an artifact and completes with a "done" status
// message.
//
// As in client.mjs, events are written as wire JSON and converted with the
// SDK's fromJSON codecs, because the SDK's objects are ts-proto shapes.

import express from 'express';
import { randomUUID } from 'node:crypto';
import { AgentCard, Message, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';

const rest = process.argv[2] === 'rest';

const now = () => new Date().toISOString();

function textOf(message) {
  return (message?.parts ?? [])
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');
}

function statusUpdate(taskId, contextId, state, message) {
  return AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({
    taskId, contextId, status: { state, timestamp: now(), ...(message ? { message } : {}) },
  }));
}

class EchoExecutor {
  // Resolvers of the "slow" executions waiting for cancelTask, by task id.
  waiting = new Map();

  async execute(ctx, bus) {
    const text = textOf(ctx.userMessage);
    const { taskId, contextId } = ctx;
    const parts = ctx.userMessage.parts;
    if (parts.length > 1 && parts[0].content?.$case === 'text' && parts[0].content.value === 'parts') {
      bus.publish(AgentEvent.task(Task.fromJSON({
        id: taskId, contextId, status: { state: 'TASK_STATE_SUBMITTED', timestamp: now() },
        history: [Message.toJSON(ctx.userMessage)],
      })));
      // The parts go back as the SDK holds them: no re-encoding by hand.
      const update = TaskArtifactUpdateEvent.fromJSON({ taskId, contextId, lastChunk: true, artifact: { artifactId: randomUUID() } });
      update.artifact.parts = parts.slice(1);
      bus.publish(AgentEvent.artifactUpdate(update));
      bus.publish(statusUpdate(taskId, contextId, 'TASK_STATE_COMPLETED'));
      bus.finished();
      return;
    }
    if (ctx.task && ctx.task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      bus.publish(AgentEvent.task(ctx.task));
      bus.publish(AgentEvent.artifactUpdate(TaskArtifactUpdateEvent.fromJSON({
        taskId, contextId, lastChunk: true,
        artifact: { artifactId: randomUUID(), parts: [{ text: `answer: ${text}` }] },
      })));
      bus.publish(statusUpdate(taskId, contextId, 'TASK_STATE_COMPLETED'));
      bus.finished();
      return;
    }
    if (text === 'ask') {
      bus.publish(AgentEvent.task(Task.fromJSON({
        id: taskId, contextId, status: { state: 'TASK_STATE_SUBMITTED', timestamp: now() },
        history: [Message.toJSON(ctx.userMessage)],
      })));
      bus.publish(statusUpdate(taskId, contextId, 'TASK_STATE_INPUT_REQUIRED', {
        messageId: randomUUID(), taskId, contextId, role: 'ROLE_AGENT', parts: [{ text: 'what number?' }],
      }));
      bus.finished();
      return;
    }
    if (text === 'message') {
      bus.publish(AgentEvent.message(Message.fromJSON({
        messageId: randomUUID(), contextId, role: 'ROLE_AGENT', parts: [{ text: 'echo: message' }],
      })));
      bus.finished();
      return;
    }
    // The SDK requires a task (or message) as every execution's first event.
    const task = ctx.task ? Task.toJSON(ctx.task) : {
      id: taskId, contextId, status: { state: 'TASK_STATE_SUBMITTED', timestamp: now() },
      history: [Message.toJSON(ctx.userMessage)],
    };
    bus.publish(AgentEvent.task(Task.fromJSON(task)));
    bus.publish(statusUpdate(taskId, contextId, 'TASK_STATE_WORKING'));
    if (text === 'slow') {
      await new Promise((resolve) => this.waiting.set(taskId, { resolve, contextId }));
      return;
    }
    bus.publish(AgentEvent.artifactUpdate(TaskArtifactUpdateEvent.fromJSON({
      taskId, contextId, lastChunk: true,
      artifact: { artifactId: randomUUID(), parts: [{ text: `echo: ${text}` }] },
    })));
    bus.publish(statusUpdate(taskId, contextId, 'TASK_STATE_COMPLETED', {
      messageId: randomUUID(), taskId, contextId, role: 'ROLE_AGENT', parts: [{ text: 'done' }],
    }));
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    const w = this.waiting.get(taskId);
    this.waiting.delete(taskId);
    bus.publish(statusUpdate(taskId, w?.contextId ?? '', 'TASK_STATE_CANCELED'));
    bus.finished();
    w?.resolve();
  }
}

const card = AgentCard.fromJSON({
  name: 'a2a-js peer',
  description: '@a2a-js/sdk 1.3.0 reference server',
  version: '1.0.0',
  supportedInterfaces: [
    ...(rest ? [{ url: 'http://127.0.0.1/rest', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }] : []),
    { url: 'http://127.0.0.1', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
  ],
  capabilities: { streaming: true, pushNotifications: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'echoes', tags: ['echo'] }],
});

const pushStore = new InMemoryPushNotificationStore();
const handler = new DefaultRequestHandler(
  card, new InMemoryTaskStore(), new EchoExecutor(), undefined,
  pushStore, new DefaultPushNotificationSender(pushStore),
);

const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
if (rest) {
  app.use('/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
}
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const server = app.listen(0, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  // The card must name the address actually bound.
  for (const i of card.supportedInterfaces) {
    i.url = i.protocolBinding === 'HTTP+JSON' ? `${url}/rest` : url;
  }
  process.stdout.write(JSON.stringify({ url }) + '\n');
});

// Clients keep connections alive, so close them rather than wait.
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
