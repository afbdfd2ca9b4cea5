/**
 * The floor under the agent's probes: what Node itself costs to do the same probing, with none of
 * podrun around it. For each address given, an HTTP GET (a new connection, closed, as the
 * kubelet's prober and podrun's do) and a TCP connect every 10 s, spread over the period as the
 * agent's workers are. Run as its own process beside the pods the footprint bench left running;
 * its CPU and memory are read from /proc like the agent's.
 *   node probe-floor.js PORT IP...
 */
import { request } from 'node:http';
import { Socket } from 'node:net';

const [port, ...hosts] = process.argv.slice(2);
const PERIOD_MS = 10_000;

function httpGet(host: string): void {
  const req = request(
    { host, port: Number(port), path: '/', agent: false, headers: { 'user-agent': 'kube-probe/1.31', accept: '*/*', connection: 'close' } },
    (res) => {
      res.resume();
      res.on('end', () => req.destroy());
    },
  );
  req.setTimeout(1000, () => req.destroy());
  req.on('error', () => undefined);
  req.end();
}

function tcpConnect(host: string): void {
  const s = new Socket();
  s.setTimeout(1000, () => s.destroy());
  s.once('error', () => undefined);
  s.connect(Number(port), host, () => s.destroy());
}

hosts.forEach((host, i) => {
  const offset = (i * PERIOD_MS) / hosts.length;
  setTimeout(() => setInterval(() => httpGet(host), PERIOD_MS), offset);
  setTimeout(() => setInterval(() => tcpConnect(host), PERIOD_MS), offset + PERIOD_MS / 2);
});
