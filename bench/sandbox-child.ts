/**
 * A sandbox process seeded in-process (startSandbox + createLead in one transaction), for when
 * `ebsync sandbox --leads` is not available. It prints the same ready block as the CLI, so the
 * benchmarks read either. Usage: tsx bench/sandbox-child.ts [--leads N] [--seed S] [--http] [--cert-dir D]
 */
import { parseArgs } from 'node:util';
import { startSandbox } from '../sandbox/server.js';
import { seedLeads } from './fixture.js';

const { values } = parseArgs({
  options: {
    leads: { type: 'string', default: '0' },
    seed: { type: 'string', default: '1' },
    http: { type: 'boolean', default: false },
    'cert-dir': { type: 'string' },
  },
});

const sandbox = await startSandbox({
  port: 0,
  http: values.http,
  ...(values['cert-dir'] ? { certDir: values['cert-dir'] } : {}),
});
const started = performance.now();
seedLeads(sandbox, Number(values.leads), Number(values.seed));
process.stderr.write(
  `seeded ${values.leads} leads in ${(performance.now() - started).toFixed(0)} ms\n`,
);
const lines = [
  'Event Business Service sandbox ready',
  `  base URL  ${sandbox.baseUrl}`,
  `  auth URL  ${sandbox.authUrl}`,
  `  API key   ${sandbox.apiKey}   (full permissions, business ${sandbox.businessId})`,
];
if (sandbox.caFile) lines.push(`  CA file   ${sandbox.caFile}`);
process.stdout.write(`${lines.join('\n')}\nStop: Ctrl-C\n`);

const stop = (): void => {
  void sandbox.close().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
