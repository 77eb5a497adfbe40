import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../config/loopback.js';
import { createClient, apiKeyAuth } from '../../api/index.js';
import { configSchema } from '../../config/index.js';

describe('isLoopbackHost: one rule for config, client, OAuth and sandbox', () => {
  it.each(['127.0.0.1', '127.8.9.10', '::1', '[::1]', '0:0:0:0:0:0:0:1', 'localhost', 'LOCALHOST'])(
    'admits %s',
    (host) => expect(isLoopbackHost(host)).toBe(true),
  );
  it.each(['x.localhost', '128.0.0.1', '10.0.0.1', '::2', 'example.com', '127.0.0.1.nip.io', ''])(
    'refuses %s',
    (host) => expect(isLoopbackHost(host)).toBe(false),
  );

  it('config and transport agree on a name under .localhost: both refuse plain http', () => {
    const base = 'http://x.localhost/api/v1/';
    const parsed = configSchema.safeParse({
      mode: 'development',
      service: { baseUrl: base, allowHttp: true },
    });
    expect(parsed.success).toBe(false);
    expect(() =>
      createClient({ baseUrl: base, auth: apiKeyAuth('ik_test'), allowInsecureLoopback: true }),
    ).toThrow(/https/);
    const ok = configSchema.safeParse({
      mode: 'development',
      service: { baseUrl: 'http://127.0.0.2:4010/api/v1/', allowHttp: true },
    });
    expect(ok.success).toBe(true);
    expect(() =>
      createClient({
        baseUrl: 'http://127.0.0.2:4010/api/v1/',
        auth: apiKeyAuth('ik_test'),
        allowInsecureLoopback: true,
      }),
    ).not.toThrow();
  });
});
