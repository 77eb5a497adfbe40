import { readFileSync } from 'node:fs';
import got, { type Method } from 'got';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../sandbox/server.js';
import { apiKeyAuth, createClient, type Client } from '../../api/index.js';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

export interface RequestOptions {
  /** Integration key; defaults to the sandbox's full-permission key. `null` sends none. */
  key?: string | null;
  bearer?: string;
  headers?: Record<string, string>;
  /** JSON body (serialised) or raw text. */
  json?: unknown;
  text?: string;
  query?: Record<string, string | number | boolean | readonly (string | number)[]>;
}

export interface TestSandbox {
  sb: Sandbox;
  /** Any unexpected (500) errors the sandbox hit; tests assert it stays empty. */
  internalErrors: unknown[];
  request(method: Method, path: string, options?: RequestOptions): Promise<RawResponse>;
  close(): Promise<void>;
}

/** A sandbox over plain HTTP on loopback (fast), or HTTPS with `https: true`. */
export async function startTestSandbox(
  options: SandboxOptions & { https?: boolean } = {},
): Promise<TestSandbox> {
  const internalErrors: unknown[] = [];
  const { https, ...rest } = options;
  const sb = await startSandbox({
    http: !https,
    onInternalError: (error) => internalErrors.push(error),
    ...rest,
  });
  const ca = sb.caFile ? readFileSync(sb.caFile, 'utf8') : undefined;
  return {
    sb,
    internalErrors,
    async request(method, path, o = {}) {
      const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
      const key = o.key === undefined ? sb.apiKey : o.key;
      if (key !== null && o.bearer === undefined) headers['api-key'] = key;
      if (o.bearer !== undefined) headers.authorization = `Bearer ${o.bearer}`;
      const searchParams = new URLSearchParams();
      for (const [name, value] of Object.entries(o.query ?? {})) {
        if (Array.isArray(value)) for (const v of value) searchParams.append(name, String(v));
        else searchParams.append(name, String(value));
      }
      const response = await got(`${sb.url}${path}`, {
        method,
        headers,
        searchParams,
        throwHttpErrors: false,
        retry: { limit: 0 },
        timeout: { request: 15_000 },
        ...(o.json !== undefined ? { json: o.json } : {}),
        ...(o.text !== undefined ? { body: o.text } : {}),
        ...(ca ? { https: { certificateAuthority: ca } } : {}),
      });
      let body: unknown;
      try {
        body = response.body ? JSON.parse(response.body) : undefined;
      } catch {
        body = undefined;
      }
      return { status: response.statusCode, headers: response.headers, body, text: response.body };
    },
    async close() {
      await sb.close();
    },
  };
}

/** A typed client of `sb` with its full-permission key (or `key`), over its plain HTTP. */
export function sandboxClient(sb: Sandbox, key: string = sb.apiKey): Client {
  return createClient({ baseUrl: sb.baseUrl, auth: apiKeyAuth(key), allowInsecureLoopback: true });
}
