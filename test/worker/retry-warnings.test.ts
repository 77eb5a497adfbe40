import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../../worker/logger.js';
import { PinoTemporalLogger } from '../../worker/runtime.js';
import { CliProcess } from '../helpers/cli.js';
import { tcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';

/**
 * A worker whose Temporal goes away: core retries each poll and warned of every retry, two a
 * second, each with the transport's debug dump (60 lines in a 30 s outage). The first is now
 * logged with the reason alone, and the rest at most once a minute, with how many were left
 * out.
 */
let dir: string;
let relay: TcpRelay;
let worker: CliProcess;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-retry-warnings-'));
  relay = await tcpRelay(inject('temporalAddress'));
  worker = new CliProcess(['worker'], {
    TEMPORAL_ADDRESS: `127.0.0.1:${relay.port}`,
    TEMPORAL_TASK_QUEUE: `retry-warnings-${Date.now()}`,
    EBSYNC_DATA_DIR: join(dir, 'data'),
  });
  await worker.waitForLine(/worker started/, 90_000);
}, 120_000);

afterAll(async () => {
  await worker?.stop('SIGTERM', 30_000);
  await relay?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

const retryLines = (): Record<string, unknown>[] =>
  worker.stdout
    .split('\n')
    .filter((line) => line.includes('temporalio_client::retry'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('a worker whose Temporal is away for 15 s', () => {
  it('logs one retry warning with the reason, not one for each retry', async () => {
    await relay.stop();
    // Long enough for core to reach its warning threshold on both polls many times over.
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    await relay.start();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const lines = retryLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 40,
      error: 'Connection refused',
      repeats: 'logged once a minute at most',
    });
    expect(lines[0]?.msg).toMatch(/^gRPC call poll_\w+ retried \d+ times$/);
    expect(worker.running).toBe(true);
  }, 60_000);
});

describe('retry warnings left out', () => {
  const retry = { sdkComponent: 'core', target: 'temporalio_client::retry' };
  const refused =
    'Status { code: Unavailable, message: "tcp connect error", source: Some(tonic::transport::Error(Transport, ConnectError(ConnectError("tcp connect error", 127.0.0.1:7233, Os { code: 111, kind: ConnectionRefused, message: "Connection refused" })))) }';

  it('are said, counted, when their window is up, though no warning follows', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({
      level: 'info',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
    const temporal = new PinoTemporalLogger(logger, 300);
    // One outage: the first line at once, the rest of it left out.
    for (let n = 6; n <= 9; n++) {
      temporal.warn(`gRPC call poll_workflow_task_queue retried ${n} times`, {
        ...retry,
        error: refused,
      });
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      error: 'Connection refused',
      msg: expect.stringMatching(/retried 6 times$/),
    });
    expect(lines[0]).not.toHaveProperty('leftOut');
    // It ends; nothing more comes: the three left out are still said, the last with the count.
    await new Promise((r) => setTimeout(r, 600));
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({
      level: 40,
      error: 'Connection refused',
      leftOut: 2,
      msg: 'gRPC call poll_workflow_task_queue retried 9 times',
    });
  });
});
