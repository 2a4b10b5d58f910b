-- wrk script for bench/ingest.py: replays a corpus of pre-signed Cloud API webhook bodies.
--
--   WRK_DELAY_MS=0 wrk -t T -c C -d D -s bench/wrk_webhooks.lua http://127.0.0.1:PORT -- CORPUS T [PATH]
--
-- CORPUS has one request per line: "<X-Hub-Signature-256>\t<JSON body>". Thread k of T sends
-- lines k, k+T, k+2T, ... so threads never send the same line; a thread that reaches the end of
-- its share starts again (those repeats are duplicates, and bench/ingest.py reports how many
-- requests were sent against the corpus size). WRK_DELAY_MS > 0 paces each connection (wrk waits
-- that long before a connection's next request), which is how the fixed-rate run is driven.
-- done() prints one JSON line that bench/ingest.py parses.

local thread_count = 0
local threads = {}

function setup(thread)
  thread:set("index", thread_count)
  thread_count = thread_count + 1
  table.insert(threads, thread)
end

local requests = {}
local position = 0
local path = "/webhooks/whatsapp/"

function init(args)
  local corpus = args[1]
  local total = tonumber(args[2]) or 1
  if args[3] then path = args[3] end
  local line_no = 0
  for line in io.lines(corpus) do
    if line_no % total == index then
      local tab = string.find(line, "\t", 1, true)
      local signature = string.sub(line, 1, tab - 1)
      local body = string.sub(line, tab + 1)
      requests[#requests + 1] = wrk.format("POST", path, {
        ["Content-Type"] = "application/json",
        ["X-Hub-Signature-256"] = signature,
      }, body)
    end
    line_no = line_no + 1
  end
end

function request()
  position = position + 1
  if position > #requests then position = 1 end
  return requests[position]
end

-- wrk only calls delay() when the script defines it (a zero delay would still cost a timer).
local delay_ms = tonumber(os.getenv("WRK_DELAY_MS") or "0") or 0
if delay_ms > 0 then
  function delay()
    return delay_ms
  end
end

function done(summary, latency, requests_)
  local errors = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "bytes": %d, "errors": {"connect": %d, "read": %d, '
      .. '"write": %d, "status": %d, "timeout": %d}, "latency_us": {"mean": %.1f, "p50": %d, '
      .. '"p90": %d, "p99": %d, "max": %d}}\n',
    summary.requests, summary.duration, summary.bytes, errors.connect, errors.read,
    errors.write, errors.status, errors.timeout, latency.mean, latency:percentile(50),
    latency:percentile(90), latency:percentile(99), latency.max))
end
