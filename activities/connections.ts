import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { InvalidGrantError, refreshTokens, revokeToken } from '../api/oauth.js';
import type { TokenJournal } from '../store/token-journal.js';
import { INVALID_GRANT, type RefreshedTokens } from '../workflows/connection-types.js';

export interface ConnectionActivityDeps {
  journal: TokenJournal;
  /** Extra certificate authority for the OAuth server (the sandbox's). */
  ca?: string | Buffer;
  /** Runs after the rotated tokens are durable, before the activity returns (crash tests). */
  afterRotationRecorded?: () => Promise<void> | void;
}

export interface RefreshInput {
  connectionId: string;
  authUrl: string;
  clientId: string;
  refreshToken: string;
}

interface HeartbeatRecord {
  replacedHash: string;
  tokens: RefreshedTokens;
}

const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex');

/** Activities of the connection workflow: the only calls that touch the OAuth server. */
export function createConnectionActivities(deps: ConnectionActivityDeps) {
  return {
    /**
     * Refreshes once per refresh token, whatever happens to the worker: a retry first looks
     * for a rotation already made with this refresh token (in the heartbeat, shared through
     * Temporal, then in the local journal) and returns it instead of asking again.
     */
    async refreshConnectionTokens(input: RefreshInput): Promise<RefreshedTokens> {
      const ctx = Context.current();
      const replacedHash = hashOf(input.refreshToken);
      const beat = ctx.info.heartbeatDetails as HeartbeatRecord | undefined;
      if (beat?.replacedHash === replacedHash) return beat.tokens;
      const journaled = await deps.journal.recall<RefreshedTokens>(
        input.connectionId,
        input.refreshToken,
      );
      if (journaled) return journaled;
      ctx.heartbeat();

      let tokens: RefreshedTokens;
      try {
        const answer = await refreshTokens({
          authUrl: input.authUrl,
          clientId: input.clientId,
          refreshToken: input.refreshToken,
          timeoutMs: 8_000,
          ...(deps.ca ? { ca: deps.ca } : {}),
        });
        tokens = {
          accessToken: answer.accessToken,
          refreshToken: answer.refreshToken,
          expiresIn: Math.max(1, Math.round((answer.expiresAt - Date.now()) / 1000)),
          scope: answer.scope,
        };
      } catch (error) {
        if (error instanceof InvalidGrantError) {
          throw ApplicationFailure.create({
            type: INVALID_GRANT,
            message: error.message,
            nonRetryable: true,
          });
        }
        throw error;
      }
      await deps.journal.record(input.connectionId, input.refreshToken, tokens);
      ctx.heartbeat({ replacedHash, tokens } satisfies HeartbeatRecord);
      await deps.afterRotationRecorded?.();
      return tokens;
    },

    /** Disconnect: revoking the refresh token ends the grant at the service. */
    async revokeConnectionTokens(input: {
      authUrl: string;
      clientId: string;
      refreshToken: string;
    }): Promise<void> {
      await revokeToken({
        authUrl: input.authUrl,
        clientId: input.clientId,
        token: input.refreshToken,
        tokenTypeHint: 'refresh_token',
        ...(deps.ca ? { ca: deps.ca } : {}),
      });
    },
  };
}
