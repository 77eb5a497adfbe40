/**
 * The connection workflow's contract with its activities and its callers: its shapes, failure
 * types, updates and queries (called by these definitions, never by name). Credentials travel
 * only inside Temporal payloads, which the payload codec encrypts.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { LimitMinutes, RateLimitSignal } from './rate-limit-types.js';
export type ConnectionKind = 'installed_app' | 'integration_key' | 'legacy_app';
export type ConnectionState = 'active' | 'needs_reauth' | 'paused' | 'disconnected';

export interface OAuthCredentials {
  kind: 'oauth';
  accessToken: string;
  /** Epoch ms. */
  accessExpiresAt: number;
  /** Epoch ms when it was issued; sets how early the next refresh happens. */
  accessIssuedAt: number;
  refreshToken: string;
}
export interface ApiKeyCredentials {
  kind: 'apiKey';
  apiKey: string;
}
export interface LegacyAppCredentials {
  kind: 'legacyApp';
  appId: string;
  appSecret: string;
  franchiseId?: string;
}
export type Credentials = OAuthCredentials | ApiKeyCredentials | LegacyAppCredentials;

export interface ConnectionProfile {
  connectionId: string;
  kind: ConnectionKind;
  baseUrl: string;
  /** OAuth server of installed apps. */
  authUrl?: string;
  clientId?: string;
  businessName?: string;
  permissions: string[];
  /**
   * Raised by each reconnect: a worker drops the credential and service client it holds from
   * before (activities/connection-tokens.ts), so the next request uses the new ones. Absent
   * until the first reconnect.
   */
  credentialsVersion?: number;
  /**
   * Epoch ms of the last reconnect (`ebsync connect` on this connection, its credentials
   * replaced): a pass that failed before it failed with the credentials before. Absent until
   * the first reconnect.
   */
  reconnectedAt?: number;
}

export interface ConnectionInput {
  profile: ConnectionProfile;
  credentials: Credentials;
  /** Continue as new past this many history events (default 2,000; tests set it low). */
  historyLimit?: number;
  /** Carried across continue-as-new. */
  carried?: {
    state: ConnectionState;
    lastError: string | null;
    refreshCount: number;
    connectedAt: number;
    lastRateLimit?: RateLimitSignal | null;
    rateLimitedMinutes?: LimitMinutes;
  };
}

export interface ConnectionStatus extends ConnectionProfile {
  state: ConnectionState;
  lastError: string | null;
  refreshCount: number;
  connectedAt: number;
  /** The last time the service turned this connection away for its rate (429 or 403). */
  lastRateLimit?: RateLimitSignal | null;
  /** The service's rate-limit refusals of this connection per minute, the last hour. */
  rateLimitedMinutes?: LimitMinutes;
  /** Epoch ms; installed apps only. */
  accessExpiresAt?: number;
}

/** What an activity gets to call the service. */
export type IssuedCredentials =
  | { kind: 'oauth'; accessToken: string; expiresAt: number }
  | ApiKeyCredentials
  | LegacyAppCredentials;

export interface TokenRequestArgs {
  /** An access token the service refused (401): never hand it out again. */
  rejectedToken?: string;
}

export interface RefreshedTokens {
  accessToken: string;
  refreshToken: string;
  /** Seconds, from the token response. */
  expiresIn: number;
  scope: string[];
}

export interface CredentialsRejection {
  /**
   * The secret the service refused with a 401 after one fresh token: an access token, an
   * integration key or a legacy app secret. Compared with the current one, so a refusal of
   * credentials already replaced (by a refresh or a reconnect) changes nothing.
   */
  rejected: string;
}

/** Failure types the workflow and its callers recognise. */
export const INVALID_GRANT = 'InvalidGrant';
/** Needs reauthorization or disconnected: do not retry, nothing will change by waiting. */
export const CONNECTION_NOT_ACTIVE = 'ConnectionNotActive';
/** Paused by the user: retry later, the connection resumes as it was. */
export const CONNECTION_PAUSED = 'ConnectionPaused';

export const connectionWorkflowId = (connectionId: string): string => `connection-${connectionId}`;

/**
 * The command that gives a connection new credentials. An integration key's connection takes
 * a new key (`--api-key`); `ebsync connect --name` alone runs an installed app's browser
 * flow, which for a key's connection would replace the key by an app install the user may not
 * have (no client id) or want.
 */
export function reconnectCommand(connectionId: string, kind: string | undefined): string {
  return kind === 'integration_key'
    ? `ebsync connect --api-key --name ${connectionId}`
    : `ebsync connect --name ${connectionId}`;
}

export const getCredentialsUpdate = defineUpdate<IssuedCredentials, [TokenRequestArgs]>(
  'getCredentials',
);
export const reconnectUpdate = defineUpdate<
  ConnectionStatus,
  [
    {
      credentials: Credentials;
      permissions?: string[];
      businessName?: string;
      /** Where and how the new credentials were checked; absent from older callers. */
      service?: Pick<ConnectionProfile, 'kind' | 'baseUrl' | 'authUrl' | 'clientId'>;
    },
  ]
>('reconnect');
export const setPausedUpdate = defineUpdate<ConnectionStatus, [boolean]>('setPaused');
/** The service still answered 401 after one fresh token (DESIGN decision 10). */
export const credentialsRejectedUpdate = defineUpdate<ConnectionStatus, [CredentialsRejection]>(
  'credentialsRejected',
);
export const disconnectUpdate = defineUpdate<ConnectionStatus, []>('disconnect');
export const statusQuery = defineQuery<ConnectionStatus>('status');
