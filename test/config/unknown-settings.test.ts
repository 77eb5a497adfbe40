import { describe, expect, it } from 'vitest';
import { SETTINGS, unknownSettings } from '../../config/index.js';

describe('unknownSettings: variables named like a setting that are none', () => {
  it('names each, sorted, with the setting a few letters away; EBS_ ones only when misspelled', () => {
    expect(
      unknownSettings({
        EBSYNC_LOG_LEVL: 'debug',
        EBS_BASEURL: 'https://x',
        EBSYNC_SOMETHING_ELSE_ENTIRELY: '1',
        EBS_VOLUME_ID: 'vol-0abc',
        PATH: '/bin',
        TEMPORAL_CLI_ADDRESS: 'x',
      }),
    ).toEqual([
      { name: 'EBSYNC_LOG_LEVL', suggestion: 'EBSYNC_LOG_LEVEL' },
      { name: 'EBSYNC_SOMETHING_ELSE_ENTIRELY' },
      { name: 'EBS_BASEURL', suggestion: 'EBS_BASE_URL' },
    ]);
  });

  it('says nothing of the settings, nor of the names ebsync reads besides them', () => {
    const env = Object.fromEntries(SETTINGS.map((s) => [s.env, 'x']));
    expect(unknownSettings({ ...env, EBSYNC_DEBUG: '1', EBSYNC_NODE_REEXEC: '1' })).toEqual([]);
  });
});
