import { Option, type Command } from 'commander';
import { RESOURCES } from '../../destinations/record.js';
import { intFlag, portFlag } from '../options.js';
import type { AddFlags } from '../webhook-automations.js';
import type { RegisterFlags } from '../webhooks.js';

const receiver = () => import('../webhooks.js');
const automations = () => import('../webhook-automations.js');

/** `ebsync webhooks endpoints add|list|remove|enable` and `ebsync webhooks deliveries`. */
function registerAutomationCommands(webhooks: Command): void {
  const endpoints = webhooks
    .command('endpoints')
    .description(
      'Automation endpoints: each applied change is POSTed to them, signed (Standard Webhooks).',
    );
  endpoints
    .command('add <name> <url>')
    .description(
      "Add an endpoint; prints its signing secret once. <url> '-' reads the URL from standard input (hook URLs often carry a token, which ps would show).",
    )
    .option('--types <list>', `only these record tables (${RESOURCES.join(', ')})`)
    .option('--actions <list>', 'only these actions (written, deleted)')
    .option('--connections <list>', 'only changes of these connections')
    .action(async (name: string, url: string, flags: AddFlags) =>
      (await automations()).endpointsAddCommand(name, url, flags),
    );
  endpoints
    .command('list')
    .description('List endpoints (URLs masked), their filters and state.')
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }) => (await automations()).endpointsListCommand(flags));
  endpoints
    .command('remove <name>')
    .description('Remove an endpoint; nothing more is sent to it.')
    .action(async (name: string) => (await automations()).endpointsRemoveCommand(name));
  endpoints
    .command('enable <name>')
    .description(
      'Send to a disabled endpoint again (one that answered 410 Gone), with the same URL and secret.',
    )
    .action(async (name: string) => (await automations()).endpointsEnableCommand(name));
  webhooks
    .command('deliveries')
    .description('The automation delivery log, newest first.')
    .option('--endpoint <name>', 'only this endpoint')
    .addOption(new Option('--limit <n>', 'rows to show').argParser(intFlag(1, 10_000)).default(50))
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean; endpoint?: string; limit: number }) =>
      (await automations()).deliveriesCommand(flags),
    );
}

/**
 * `ebsync webhooks …`: the receiver (serve, register) and the automation endpoints; words and
 * help here, the work in ../webhooks.ts and ../webhook-automations.ts.
 */
export function registerWebhookCommands(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description("Receive the service's webhooks: each change is re-read and written at once.");

  webhooks
    .command('serve')
    .description(
      'Run the webhook receiver: POST /webhooks/{connection}, signatures checked, each delivery stored in the inbox (EBSYNC_STORE_URL) before the answer, drained by the workers.',
    )
    .option('--host <address>', 'listen address (default: EBSYNC_WEBHOOK_HOST)')
    .addOption(
      new Option(
        '--port <port>',
        'listen port, 0 for any free one (default: EBSYNC_WEBHOOK_PORT)',
      ).argParser(portFlag()),
    )
    .action(async (flags: { host?: string; port?: number }) =>
      (await receiver()).webhooksServeCommand(flags),
    );

  webhooks
    .command('register <connection>')
    .description(
      'Register the receiver for a connection and store its signing secret sealed: at the sandbox (--sandbox-admin), or with a secret the service gave you (--secret-stdin).',
    )
    .option(
      '--url <url>',
      "public URL of the receiver, to which /webhooks/<connection> is added (or that whole delivery URL) (default: where this data dir's receiver listens on this machine, else http://EBSYNC_WEBHOOK_HOST:EBSYNC_WEBHOOK_PORT)",
    )
    .option(
      '--to <destination>',
      'sqlite:PATH or postgres://… (default: sqlite:<EBSYNC_DATA_DIR>/mirror.db)',
    )
    .option('--sandbox-admin <url>', "the sandbox's admin URL (https://…/admin)")
    .option(
      '--admin-token <token>',
      "the sandbox's x-admin-token: '-' reads it from standard input (default: EBS_SANDBOX_ADMIN_TOKEN; a token typed here shows in ps)",
    )
    .option('--secret-stdin', 'read the signing secret from standard input')
    .option(
      '--no-check-destination',
      'register without opening the database from this machine first (for one only the workers reach)',
    )
    .action(async (connection: string, flags: RegisterFlags) =>
      (await receiver()).webhooksRegisterCommand(connection, flags),
    );

  registerAutomationCommands(webhooks);
}
