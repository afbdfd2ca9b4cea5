import { isIP as netIsIP } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isIP } from '../../src/base/ip.js';

// src/base/ip.ts judges dotted quads itself, so that checking --node-ip does not load node:net:
// its answer must be node:net's for every string.
describe('isIP', () => {
  it('answers as node:net for addresses and near misses', () => {
    const cases = [
      '127.0.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '256.0.0.1',
      '01.2.3.4',
      '1.2.3.04',
      '1.2.3',
      '1.2.3.4.5',
      '1.2.3.',
      '.1.2.3',
      '1.2.3.4 ',
      ' 1.2.3.4',
      '1.2.3.4\n',
      '+1.2.3.4',
      '1.2.3.-4',
      '1e2.1.1.1',
      '0x1.2.3.4',
      '١.٢.٣.٤',
      '',
      'localhost',
      '::1',
      '::',
      'fe80::1%eth0',
      '::ffff:1.2.3.4',
      '2001:db8::1',
      '1:2:3:4:5:6:7:8',
      '1:2:3:4:5:6:7:8:9',
      'abc',
      '1.2.3.4/24',
      '999.1.1.1',
      '100.200.250.255',
      '00.0.0.0',
    ];
    for (const c of cases) expect([c, isIP(c)]).toEqual([c, netIsIP(c)]);
  });

  it('answers as node:net for any string of digits, dots, colons and the like', () => {
    const char = fc.constantFrom(...'0123456789.:abf%x-+ '.split(''));
    fc.assert(
      fc.property(
        fc.array(char, { maxLength: 20 }).map((a) => a.join('')),
        (s) => isIP(s) === netIsIP(s),
      ),
      { numRuns: 20000 },
    );
    const octet = fc.oneof(fc.integer({ min: 0, max: 300 }).map(String), fc.constantFrom('00', '01', '001', '0255', '1e1'));
    fc.assert(
      fc.property(
        fc.array(octet, { minLength: 3, maxLength: 5 }).map((a) => a.join('.')),
        (s) => isIP(s) === netIsIP(s),
      ),
      { numRuns: 20000 },
    );
  });
});
