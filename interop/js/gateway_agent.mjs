// An @a2a-js/sdk 1.3.0 agent for the execution gateway's interop and
// crash tests (../gateway_*_test.go), installed into NovaOS by URL.
//
//   node gateway_agent.mjs [PORT] [--hold]
//
// It listens on 127.0.0.1:PORT (0 or none: an ephemeral port), prints
// {"url": "http://127.0.0.1:PORT"} when listening, and then one JSON line
// {"delivery": {…}} for every message it is sent: the message id (the
// gateway's idempotency key), the task and context ids, the text, and the
// platform context the gateway put in the request's metadata, with the
// execution token replaced by "(present)" so that it never reaches a log;
// and {"cancel": {"task_id": …}} for every CancelTask.
// Listening on a given port is what lets a test kill the process with
// SIGKILL and start it again where the gateway will redeliver.
//
// "ask" waits for input (the next message on the task completes it with
// "answer: <text>"); "hold" reports WORKING with the message "working" and,
// with --hold, then waits until the process is killed or the task is
// cancelled (without it, it goes on like any other text); anything else is echoed as an artifact and
// completes with a "done" status message.

import express from 'express';
import { randomUUID } from 'node:crypto';
import { AgentCard, Message, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';

const args = process.argv.slice(2);
const hold = args.includes('--hold');
const port = Number(args.find((a) => /^\d+$/.test(a)) ?? 0);

const contextKey = 'novaos.dev/context';
const now = () => new Date().toISOString();

function textOf(message) {
  return (message?.parts ?? [])
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');
}

function statusUpdate(taskId, contextId, state, text) {
  const message = text === undefined ? undefined : {
    messageId: randomUUID(), taskId, contextId, role: 'ROLE_AGENT', parts: [{ text }],
  };
  return AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({
    taskId, contextId, status: { state, timestamp: now(), ...(message ? { message } : {}) },
  }));
}

// report writes one delivery as a line of JSON for the Go test.
function report(ctx) {
  const pc = { ...(ctx.request?.metadata?.[contextKey] ?? {}) };
  if ('execution_token' in pc) {
    pc.execution_token = '(present)';
  }
  const delivery = {
    message_id: ctx.userMessage.messageId,
    task_id: ctx.taskId,
    context_id: ctx.contextId,
    text: textOf(ctx.userMessage),
    resumed: Boolean(ctx.task),
    task_state: ctx.task?.status?.state,
    context: pc,
  };
  process.stdout.write(JSON.stringify({ delivery }) + '\n');
}

class GatewayAgent {
  // The held executions, by task id: cancelTask lets them go.
  held = new Map();

  async execute(ctx, bus) {
    report(ctx);
    const text = textOf(ctx.userMessage);
    const { taskId, contextId } = ctx;
    // Read before anything is published: publishing updates the task.
    const answering = ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    const task = ctx.task ? Task.toJSON(ctx.task) : {
      id: taskId, contextId, status: { state: 'TASK_STATE_SUBMITTED', timestamp: now() },
      history: [Message.toJSON(ctx.userMessage)],
    };
    // The SDK wants a task (or message) as every execution's first event,
    // follow-up turns included. An answered task is republished WORKING:
    // republished as it was stored, INPUT_REQUIRED, it would end the SDK's
    // stream there (an interrupted state), and the gateway would read it
    // as the pause again.
    if (answering) {
      task.status = { state: 'TASK_STATE_WORKING', timestamp: now() };
    }
    bus.publish(AgentEvent.task(Task.fromJSON(task)));
    if (answering) {
      bus.publish(AgentEvent.artifactUpdate(TaskArtifactUpdateEvent.fromJSON({
        taskId, contextId, lastChunk: true,
        artifact: { artifactId: randomUUID(), parts: [{ text: `answer: ${text}` }] },
      })));
      bus.publish(statusUpdate(taskId, contextId, 'TASK_STATE_COMPLETED', 'done'));
      bus.finished();
      return;
    }
    if (text === 'ask') {
      bus.publish(statusUpdate(taskId, contextId, 'TASK_STATE_INPUT_REQUIRED', 'what number?'));
      bus.finished();
      return;
    }
    bus.publish(statusUpdate(taskId, contextId, 'TASK_STATE_WORKING', text === 'hold' ? 'working' : undefined));
    if (text === 'hold' && hold) {
      // Until SIGKILL or cancelTask, which ends the task itself.
      await new Promise((resolve) => this.held.set(taskId, { resolve, contextId }));
      return;
    }
    bus.publish(AgentEvent.artifactUpdate(TaskArtifactUpdateEvent.fromJSON({
      taskId, contextId, lastChunk: true,
      artifact: { artifactId: randomUUID(), parts: [{ text: `echo: ${text}` }] },
    })));
    bus.publish(statusUpdate(taskId, contextId, 'TASK_STATE_COMPLETED', 'done'));
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    process.stdout.write(JSON.stringify({ cancel: { task_id: taskId } }) + '\n');
    const h = this.held.get(taskId);
    this.held.delete(taskId);
    bus.publish(statusUpdate(taskId, h?.contextId ?? '', 'TASK_STATE_CANCELED'));
    bus.finished();
    h?.resolve();
  }
}

const card = AgentCard.fromJSON({
  name: 'a2a-js gateway peer',
  description: '@a2a-js/sdk 1.3.0 agent run through the NovaOS execution gateway',
  version: '1.0.0',
  supportedInterfaces: [{ url: 'http://127.0.0.1', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  capabilities: { streaming: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'echoes', tags: ['echo'] }],
});

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new GatewayAgent());

const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const server = app.listen(port, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  card.supportedInterfaces[0].url = url; // the address actually bound
  process.stdout.write(JSON.stringify({ url }) + '\n');
});
server.on('error', (err) => {
  process.stderr.write(`listen: ${err.message}\n`);
  process.exit(1);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
