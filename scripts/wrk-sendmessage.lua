-- wrk script: SendMessage (JSON-RPC, A2A 1.0) with a fresh messageId per
-- request, for measuring `novaos serve` from outside its process:
--
--   wrk -t2 -c32 -d10s -s scripts/wrk-sendmessage.lua http://127.0.0.1:8080/agents/echo
--
-- wrk counts only transport errors and non-2xx answers; check once by hand
-- (curl) that the server answers the body below with a task.
local counter = 0
local thread_id = 0

function setup(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end

function init(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["A2A-Version"] = "1.0"
end

function request()
  counter = counter + 1
  local id = string.format("wrk-%d-%d-%d", thread_id, counter, math.random(1, 1e9))
  local body = '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
    .. '{"messageId":"' .. id .. '","role":"ROLE_USER","parts":[{"text":"hello from wrk"}]}}}'
  return wrk.format(nil, nil, nil, body)
end

function done(summary, latency, requests)
  io.write(string.format("requests %d, p50 %.2fms, p99 %.2fms, %.0f req/s\n",
    summary.requests, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.requests / (summary.duration / 1e6)))
end
