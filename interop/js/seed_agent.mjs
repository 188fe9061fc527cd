// An @a2a-js/sdk 1.3.0 agent that calls its tools as an agent built on the
// NovaOS Python SDK does, with no NovaOS code: the platform context comes
// from the request's metadata under "novaos.dev/context" (the SDK's
// AgentRuntimeContext: mcp_gateway_url, mcp_gateway_token, tenant_id,
// config), every tool call is the SDK's ToolBindings._call_tool (a
// JSON-RPC tools/call POSTed to {mcp_gateway_url}/tools/call with
// Authorization: Bearer and X-Tenant-ID, answered as a ToolResponse), and
// a call the gateway holds (-32042) pauses the task with what the SDK's
// MessageBuilder.create_write_confirmation_required_message builds: a
// text part and a data part tagged
// {"mediaType": "application/vnd.novaos.metadata+json"} holding
// {"write_confirmation": {call_id, tool_name, session_id, …}}, the task in
// AUTH_REQUIRED (an approval out of band, not a question).
//
//   node seed_agent.mjs
//
// It listens on an ephemeral 127.0.0.1 port and prints
// {"url": "http://127.0.0.1:PORT"}, then one JSON line per delivery
// ({"delivery": {…}}, the platform context without its tokens) and per tool
// call ({"call": {tool, success, data, error, held}}).
//
// The skill: write the request to run memory (novaos.memory.write), look
// the order up with the upstream tool the instance's config names
// (config.upstream_tool), then notify the webhook config.hook names
// (novaos.notify.webhook, write-class). When the gateway holds the
// webhook, the task pauses; the platform resumes it with the person's
// answer (a hitl_response naming the call), and the skill makes the held
// call again with the same arguments, now with a token bound to that
// call, and completes with what it sent.

import express from 'express';
import { randomUUID } from 'node:crypto';
import { AgentCard, Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';

// The NovaOS Python SDK's names for the conventions used here.
const CONTEXT_METADATA_KEY = 'novaos.dev/context';
const NOVAOS_METADATA_CONTENT_TYPE = 'application/vnd.novaos.metadata+json';
const NOVAOS_METADATA_PART_KEY = 'mediaType';
const NOVAOS_PAUSE_WRITE_CONFIRMATION_KEY = 'write_confirmation';
const HITL_RESPONSE_KEY = 'hitl_response';
const HITL_REQUIRED = -32042;
// NOVAOS_TOOL_TIMEOUT_S's default.
const DEFAULT_TOOL_TIMEOUT_S = 128;

const now = () => new Date().toISOString();
const line = (v) => process.stdout.write(JSON.stringify(v) + '\n');

// ToolResponse is the SDK's: success, data, error.
class ToolResponse {
  constructor(success, data = null, error = null) {
    Object.assign(this, { success, data, error });
  }
}

// WriteConfirmationRequired is what a held call raises: the -32042
// error's data (code HITL_REQUIRED, call_id, tool_name, session_id, …).
class WriteConfirmationRequired extends Error {
  constructor(message, data) {
    super(message);
    this.name = 'WriteConfirmationRequired';
    this.data = data ?? {};
  }
}

// ToolBindings are the SDK's: one _call_tool behind every binding.
class ToolBindings {
  #token;
  constructor(mcpGatewayUrl, token, tenantId) {
    if (!mcpGatewayUrl || !token || !tenantId) {
      throw new Error('the platform context lacks mcp_gateway_url, mcp_gateway_token or tenant_id');
    }
    this.url = mcpGatewayUrl.replace(/\/+$/, '') + '/tools/call';
    this.#token = token;
    this.tenantId = tenantId;
    this.nextId = 1;
    this.memory = { write: (scope, content) => this._call_tool('novaos.memory.write', { scope, content }) };
    this.notify = { webhook: (url, payload) => this._call_tool('novaos.notify.webhook', { url, payload }) };
  }

  async _call_tool(name, args) {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${this.#token}`, 'X-Tenant-ID': this.tenantId },
      body: JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method: 'tools/call', params: { name, arguments: args } }),
      signal: AbortSignal.timeout(DEFAULT_TOOL_TIMEOUT_S * 1000),
    });
    let body;
    try {
      body = await res.json();
    } catch {
      return new ToolResponse(false, null, `the gateway answered HTTP ${res.status} without JSON-RPC`);
    }
    if (body.error) {
      if (body.error.code === HITL_REQUIRED) {
        throw new WriteConfirmationRequired(body.error.message, body.error.data);
      }
      return new ToolResponse(false, body.error.data ?? null, `${body.error.message} (${body.error.code})`);
    }
    const result = body.result ?? {};
    const text = (result.content ?? []).find((c) => c.type === 'text')?.text ?? null;
    let data = result.structuredContent ?? null;
    if (data === null && text !== null) {
      try {
        data = JSON.parse(text);
      } catch {
        data = text;
      }
    }
    return result.isError ? new ToolResponse(false, data, text ?? 'the tool failed') : new ToolResponse(true, data);
  }
}

// createWriteConfirmationRequiredMessage is the SDK's
// MessageBuilder.create_write_confirmation_required_message, as wire JSON.
function createWriteConfirmationRequiredMessage(content, callId, toolName, sessionId, metadata, ids) {
  const payload = { ...(metadata ?? {}), call_id: callId, tool_name: toolName };
  if (sessionId) {
    payload.session_id = sessionId;
  }
  return {
    messageId: randomUUID(), ...ids, role: 'ROLE_AGENT',
    parts: [
      { text: content },
      { data: { [NOVAOS_PAUSE_WRITE_CONFIRMATION_KEY]: payload }, metadata: { [NOVAOS_METADATA_PART_KEY]: NOVAOS_METADATA_CONTENT_TYPE } },
    ],
  };
}

// platformData returns the NovaOS control data of a wire message's tagged
// data parts, merged.
function platformData(message) {
  const out = {};
  for (const p of message?.parts ?? []) {
    if (p.data && typeof p.data === 'object' && p.metadata?.[NOVAOS_METADATA_PART_KEY] === NOVAOS_METADATA_CONTENT_TYPE) {
      Object.assign(out, p.data);
    }
  }
  return out;
}

function textOf(message) {
  return (message?.parts ?? []).map((p) => p.text ?? '').join('');
}

function status(ids, state, message) {
  return AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({
    ...ids, status: { state, timestamp: now(), ...(message ? { message } : {}) },
  }));
}

function agentText(ids, text) {
  return { messageId: randomUUID(), ...ids, role: 'ROLE_AGENT', parts: [{ text }] };
}

// report writes a tool call's outcome for the Go test.
function report(tool, r) {
  line({ call: { tool, success: r.success, data: r.data, error: r.error } });
  return r;
}

class SeedAgent {
  // The held calls, by task id: what to call again once approved.
  held = new Map();

  async execute(ctx, bus) {
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    const pc = ctx.request?.metadata?.[CONTEXT_METADATA_KEY] ?? {};
    const msg = Message.toJSON(ctx.userMessage);
    const state = ctx.task ? Task.toJSON(ctx.task).status?.state : undefined;
    const resumed = state === 'TASK_STATE_AUTH_REQUIRED' || state === 'TASK_STATE_INPUT_REQUIRED';
    line({ delivery: {
      message_id: msg.messageId, task_id: ctx.taskId, text: textOf(msg), resumed, task_state: state ?? null,
      run_id: pc.run_id ?? null, tenant_id: pc.tenant_id ?? null, mcp_gateway_url: pc.mcp_gateway_url ?? null,
      has_mcp_gateway_token: Boolean(pc.mcp_gateway_token), mcp_write_hitl_active: pc.mcp_write_hitl_active ?? null,
      config: pc.config ?? null, platform_data: platformData(msg),
    } });

    // Every execution starts with the task; an answered pause is
    // republished WORKING (republished as stored, it would read as the
    // pause again).
    const task = ctx.task ? Task.toJSON(ctx.task) : {
      id: ctx.taskId, contextId: ctx.contextId, status: { state: 'TASK_STATE_SUBMITTED', timestamp: now() }, history: [msg],
    };
    task.status = { state: 'TASK_STATE_WORKING', timestamp: now() };
    bus.publish(AgentEvent.task(Task.fromJSON(task)));

    const fail = (why) => {
      bus.publish(status(ids, 'TASK_STATE_FAILED', agentText(ids, why)));
      bus.finished();
    };
    const done = (text) => {
      bus.publish(AgentEvent.artifactUpdate(TaskArtifactUpdateEvent.fromJSON({
        ...ids, lastChunk: true, artifact: { artifactId: randomUUID(), parts: [{ text }] },
      })));
      bus.publish(status(ids, 'TASK_STATE_COMPLETED', agentText(ids, 'done')));
      bus.finished();
    };

    let tools;
    try {
      tools = new ToolBindings(pc.mcp_gateway_url, pc.mcp_gateway_token, pc.tenant_id);
    } catch (err) {
      return fail(err.message);
    }

    try {
      if (resumed) {
        const pending = this.held.get(ctx.taskId);
        const answer = platformData(msg)[HITL_RESPONSE_KEY];
        if (!pending) {
          return fail('no held call to resume on this task');
        }
        if (answer?.metadata?.call_id !== pending.callId || answer?.metadata?.approved !== true) {
          this.held.delete(ctx.taskId);
          return fail(`the call of ${pending.tool} was not approved`);
        }
        this.held.delete(ctx.taskId);
        const r = report(pending.tool, await tools._call_tool(pending.tool, pending.args));
        return r.success ? done(`notified: ${JSON.stringify(r.data)}`) : fail(`${pending.tool}: ${r.error}`);
      }

      const config = pc.config ?? {};
      const request = textOf(msg);
      const mem = report('novaos.memory.write', await tools.memory.write('run', `refund requested: ${request}`));
      if (!mem.success) {
        return fail(`novaos.memory.write: ${mem.error}`);
      }
      const order = report(config.upstream_tool, await tools._call_tool(config.upstream_tool, { order_id: 'A-1001' }));
      if (!order.success) {
        return fail(`${config.upstream_tool}: ${order.error}`);
      }
      const args = { url: config.hook, payload: { text: `refunded ${request}`, order: order.data } };
      try {
        const sent = report('novaos.notify.webhook', await tools.notify.webhook(args.url, args.payload));
        return sent.success ? done(`notified: ${JSON.stringify(sent.data)}`) : fail(`novaos.notify.webhook: ${sent.error}`);
      } catch (err) {
        if (!(err instanceof WriteConfirmationRequired)) {
          throw err;
        }
        const d = err.data;
        line({ call: { tool: 'novaos.notify.webhook', success: false, held: d } });
        this.held.set(ctx.taskId, { tool: d.tool_name || 'novaos.notify.webhook', args, callId: d.call_id });
        const extra = {};
        for (const k of ['action_id', 'run_id']) {
          if (d[k]) {
            extra[k] = d[k];
          }
        }
        const pause = createWriteConfirmationRequiredMessage(`Confirm sending the refund notice? (${d.tool_name})`,
          d.call_id, d.tool_name, d.session_id || pc.session_id, extra, ids);
        bus.publish(status(ids, 'TASK_STATE_AUTH_REQUIRED', pause));
        bus.finished();
      }
    } catch (err) {
      fail(`tool call failed: ${err.message}`);
    }
  }

  async cancelTask(taskId, bus) {
    this.held.delete(taskId);
    bus.publish(status({ taskId, contextId: '' }, 'TASK_STATE_CANCELED'));
    bus.finished();
  }
}

const card = AgentCard.fromJSON({
  name: 'seed-shaped agent',
  description: 'An @a2a-js/sdk agent calling tools the way the NovaOS Python SDK does',
  version: '1.0.0',
  supportedInterfaces: [{ url: 'http://127.0.0.1', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  capabilities: { streaming: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'refund', name: 'Refund', description: 'records, looks up and notifies', tags: ['tools'] }],
});

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new SeedAgent());

const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const server = app.listen(0, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  card.supportedInterfaces[0].url = url;
  line({ url });
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
