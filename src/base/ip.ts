/**
 * node:net's isIP without loading node:net for the common case: Node's net module (sockets,
 * servers, its stream machinery) is a few ms of the start of every command that checks an
 * address, such as any command given --node-ip, validate among them. A dotted quad is judged
 * here; anything that could be an IPv6 address (it has a colon) goes to node:net as before, so
 * the answer is node:net's for every input (test/base/ip.test.ts compares them).
 */
export function isIP(input: string): 0 | 4 | 6 {
  if (input.includes(':')) return process.getBuiltinModule('node:net').isIP(input) as 0 | 4 | 6;
  return isDottedQuad(input) ? 4 : 0;
}

/** Four decimal parts 0-255, each without a leading zero (Node's IPv4 form: 01.2.3.4 is not one). */
function isDottedQuad(s: string): boolean {
  const parts = s.split('.');
  return parts.length === 4 && parts.every((p) => /^(?:0|[1-9][0-9]{0,2})$/.test(p) && Number(p) <= 255);
}
