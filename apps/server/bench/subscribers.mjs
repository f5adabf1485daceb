// The client side of the server benchmark, in its own process so that parsing
// 1,000 event streams does not run on the server's event loop: opens
// `count` event streams on one run over loopback HTTP, and for every `log`
// line notes how long after its `t` (a wall-clock time in ms the workflow
// stamped just before appending the line) it arrived. Prints one JSON line:
// the latencies' percentiles and how many lines each subscriber received.
// Usage: node subscribers.mjs <events url> <count>
import http from 'node:http'

const [url, countText] = process.argv.slice(2)
const count = Number(countText)
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity })
const now = () => performance.timeOrigin + performance.now()
const latencies = []
const received = new Array(count).fill(0)
let connected = 0
let ended = 0

function subscribe(index) {
  const request = http.get(url, { agent, headers: { accept: 'text/event-stream' } }, (response) => {
    if (response.statusCode !== 200) {
      process.stderr.write(`subscriber ${index}: status ${response.statusCode}\n`)
      process.exit(1)
    }
    connected += 1
    if (connected === count) process.stdout.write('{"connected":true}\n')
    response.setEncoding('utf8')
    let buffer = ''
    response.on('data', (chunk) => {
      const at = now()
      buffer += chunk
      let end = buffer.indexOf('\n\n')
      while (end >= 0) {
        const frame = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        if (/(?:^|\n)event: log\n/.test(frame)) {
          const match = /"t":([0-9.]+)/.exec(frame)
          if (match !== null) {
            latencies.push(at - Number(match[1]))
            received[index] += 1
          }
        }
        end = buffer.indexOf('\n\n')
      }
    })
    response.on('end', () => {
      ended += 1
      if (ended === count) report()
    })
  })
  request.on('error', (error) => {
    process.stderr.write(`subscriber ${index}: ${error.message}\n`)
    process.exit(1)
  })
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

function report() {
  const sorted = Float64Array.from(latencies).sort()
  process.stdout.write(
    `${JSON.stringify({ p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1), samples: sorted.length, minReceived: Math.min(...received), maxReceived: Math.max(...received) })}\n`,
  )
  process.exit(0)
}

for (let index = 0; index < count; index += 1) subscribe(index)
