// Drives an OpenAI-compatible API (the NovaOS LLM gateway, or any
// provider) with the official OpenAI Node SDK, openai 6.49.0 (the newest
// that runs on Node 20; 7.x needs Node 22), configured as the NovaOS
// Python SDK's LLMClient configures openai.AsyncOpenAI: the base URL is
// LLM_GATEWAY_URL (the OpenAI base URL, ending in /v1) and the API key is
// the execution token, NOVAOS_EXECUTION_TOKEN.
//
//   LLM_GATEWAY_URL=http://127.0.0.1:8080/v1 NOVAOS_EXECUTION_TOKEN=… \
//   [LLM_CHAT_MODEL=gpt-4o] [LLM_EMBEDDING_MODEL=text-embedding-3-small] \
//   [LLM_SPENT_TOKEN=…] node llm_openai_client.mjs
//
// With LLM_SPENT_TOKEN, a token whose budget is spent, a last step makes
// a chat call with it, which the gateway refuses.
//
// It prints a JSON report on stdout, one entry per step with its result
// or the error the SDK raised (status, type, code, message; never a
// header). The token comes from the environment, not the command line,
// which other processes can read. The Go test in ../llm_test.go asserts
// the report.

import OpenAI from 'openai';

const baseURL = process.env.LLM_GATEWAY_URL;
const apiKey = process.env.NOVAOS_EXECUTION_TOKEN;
const chatModel = process.env.LLM_CHAT_MODEL || 'gpt-4o';
const embeddingModel = process.env.LLM_EMBEDDING_MODEL || 'text-embedding-3-small';
if (!baseURL || !apiKey) {
  console.error('usage: LLM_GATEWAY_URL=… NOVAOS_EXECUTION_TOKEN=… node llm_openai_client.mjs');
  process.exit(2);
}

const report = { sdk: `openai@${OpenAI.VERSION ?? '6.49.0'}`, steps: [] };

async function step(name, fn) {
  try {
    report.steps.push({ name, ok: true, result: await fn() });
  } catch (err) {
    report.steps.push({
      name,
      ok: false,
      error: { name: err?.constructor?.name, status: err?.status ?? null, type: err?.type ?? null, code: err?.code ?? null, message: String(err?.message ?? err) },
    });
  }
}

// No retries: a refusal is reported as the server made it.
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });

await step('models', async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    ids.push(m.id);
  }
  return { ids };
});

await step('chat', async () => {
  const r = await client.chat.completions.create({
    model: chatModel,
    messages: [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: 'hello from node' }],
  });
  return { content: r.choices[0].message.content, finish_reason: r.choices[0].finish_reason, usage: r.usage, model: r.model };
});

await step('stream', async () => {
  const stream = await client.chat.completions.create({
    model: chatModel,
    messages: [{ role: 'user', content: 'stream to node please' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const deltas = [];
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (choice?.delta?.content) {
      deltas.push(choice.delta.content);
    }
    if (choice?.finish_reason) {
      finish = choice.finish_reason;
    }
    if (chunk.usage) {
      usage = chunk.usage;
    }
  }
  return { deltas, finish_reason: finish, usage };
});

// The SDK asks for base64 and decodes it when encoding_format is not
// given; the second call asks for floats.
await step('embeddings', async () => {
  const r = await client.embeddings.create({ model: embeddingModel, input: ['first text', 'second'] });
  return { vectors: r.data.map((d) => d.embedding), usage: r.usage };
});

await step('embeddings float', async () => {
  const r = await client.embeddings.create({ model: embeddingModel, input: 'first text', encoding_format: 'float' });
  return { vectors: r.data.map((d) => d.embedding) };
});

await step('unknown model', async () => {
  await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
  return {};
});

const spentKey = process.env.LLM_SPENT_TOKEN;
if (spentKey) {
  const spent = new OpenAI({ baseURL, apiKey: spentKey, maxRetries: 0, timeout: 60_000 });
  await step('budget spent', async () => {
    await spent.chat.completions.create({ model: chatModel, messages: [{ role: 'user', content: 'over the budget' }] });
    return {};
  });
}

process.stdout.write(JSON.stringify(report) + '\n');
