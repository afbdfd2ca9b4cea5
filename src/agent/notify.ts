import { spawn } from 'node:child_process';

/**
 * Tells the service manager how the agent is doing (sd_notify): READY=1, STATUS=..., STOPPING=1.
 * Node cannot send on a unix datagram socket, so the message goes through systemd-notify, a child
 * process; --pid names this process as the sender (the unit needs NotifyAccess=all). Without
 * NOTIFY_SOCKET (not run by systemd as Type=notify) nothing is sent.
 */
export function sdNotify(fields: { ready?: boolean; stopping?: boolean; status?: string }): Promise<'sent' | 'no-socket' | string> {
  if (!process.env.NOTIFY_SOCKET) return Promise.resolve('no-socket');
  const args = [`--pid=${process.pid}`];
  if (fields.ready) args.push('--ready');
  if (fields.stopping) args.push('STOPPING=1');
  if (fields.status) args.push(`--status=${fields.status}`);
  return new Promise((resolve) => {
    const p = spawn('systemd-notify', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (c: Buffer) => (err += c.toString()));
    p.on('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ENOENT' ? 'systemd-notify is not installed' : e.message));
    p.on('close', (code) => resolve(code === 0 ? 'sent' : `systemd-notify exited ${String(code)}: ${err.trim()}`));
  });
}
