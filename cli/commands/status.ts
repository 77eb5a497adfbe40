import type { Command } from 'commander';

/** `ebsync status`: its words and help; the work is in ../status.ts. */
export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description(
      'Connections (and their 429s over the last hour), mirror passes (current and last), reach ' +
        'gaps and errors, schedules, the webhook receiver and inbox, automation endpoints and their ' +
        'breakers, with Temporal UI links. Exits 1 when a connection needs re-authorization, a last ' +
        "pass failed or ended incomplete, a schedule's last run failed, webhook notices wait over " +
        '5 minutes, or the webhook receiver fails (503s) or is down while webhooks are registered, ' +
        'naming which.\n' +
        '--serve runs the status page instead (EBSYNC_STATUS_HOST, EBSYNC_STATUS_PORT).',
    )
    .option('--json', 'print the report as JSON')
    .option('--serve', 'serve the status page until Ctrl-C')
    .action(async (flags: { json?: boolean; serve?: boolean }) =>
      (await import('../status.js')).statusCommand(flags),
    );
}
