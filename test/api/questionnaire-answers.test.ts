import { describe, expect, it } from 'vitest';
import {
  ELEMENT_NAMES,
  SONG_ELEMENTS,
  TIMELINE_ELEMENTS,
  allowedElements,
  answers,
  mergeAnswers,
  validateAnswers,
  type QuestionnaireData,
  type QuestionnaireField,
  type SuggestedSong,
} from '../../api/schemas/questionnaire-answers.js';

const dataOf = (...fields: QuestionnaireField[]): QuestionnaireData => ({
  fieldGroups: [{ name: 'Tab', fields }],
});
const f = (type: string, extra: Partial<QuestionnaireField> = {}): QuestionnaireField => ({
  uuid: `u-${type}`,
  type,
  name: type,
  ...extra,
});

/** The element-name table of the spec, written out independently of the module. */
const SPEC_TABLE: [string[], string[]][] = [
  [['header', 'subheader', 'separator', 'plain_text', 'rich_text', 'static_image'], []],
  [['text_field'], ['text']],
  [['double_text_field'], ['text', 'text2']],
  [['triple_text_field'], ['text', 'text2', 'text3']],
  [['quadruple_text_field'], ['text', 'text2', 'text3', 'text4']],
  [['text_box'], ['text']],
  [['dropdown'], ['dropdown']],
  [['radio_group'], ['radio']],
  [['checkbox', 'checkbox_group'], ['checkbox']],
  [['date_field', 'time_field', 'color_picker_field'], ['text']],
  [['file_uploader_field', 'image_uploader_field'], ['file']],
  [['e_sign_field'], ['signer', 'timestamp', 'ip']],
  [
    ['song', 'song_list'],
    [
      'songName',
      'songArtistName',
      'songAlbumName',
      'songId',
      'songProvider',
      'alphaUrl',
      'betaUrl',
      'gammaUrl',
      'deltaUrl',
      'songAlbumUrl',
      'songPreviewUrl',
      'songDurationSeconds',
      'songSuggestionListId',
      'publicNotes',
      'selectionNotes',
    ],
  ],
  [['alpha_playlist'], ['alpha']],
  [['beta_playlist'], ['beta']],
  [['gamma_playlist'], ['gamma']],
  [['music_playlist'], ['musicPlaylist']],
];
const ROWS = SPEC_TABLE.flatMap(([types, elements]) => types.map((t) => [t, elements] as const));

/** A value every element accepts (ids and durations are numbers). */
const sample = (element: string): unknown =>
  element === 'songSuggestionListId' ||
  element === 'songDurationSeconds' ||
  element === 'timelineLength'
    ? 7
    : 'x';

describe('element-name table', () => {
  it('exports exactly the spec table', () => {
    expect(Object.keys(ELEMENT_NAMES).sort()).toEqual(ROWS.map(([t]) => t).sort());
    for (const [type, elements] of ROWS) {
      expect([...(ELEMENT_NAMES as Record<string, readonly string[]>)[type]!]).toEqual(elements);
    }
    expect(SONG_ELEMENTS).toHaveLength(15);
  });

  it.each(ROWS.filter(([, e]) => e.length > 0))(
    '%s accepts each of its elements and rejects a foreign one',
    (type, elements) => {
      const field = f(type);
      const entry = Object.fromEntries(elements.map((e) => [e, sample(e)]));
      if (type === 'song' || type === 'song_list') entry.songName = 'A song';
      expect(validateAnswers({ [field.uuid]: [entry] }, dataOf(field))).toEqual([]);
      const foreign = elements.includes('text') ? 'dropdown' : 'text';
      const problems = validateAnswers({ [field.uuid]: [{ [foreign]: 'x' }] }, dataOf(field));
      expect(problems).toEqual([
        { path: `values.${field.uuid}[0].${foreign}`, message: expect.stringContaining(type) },
      ]);
    },
  );

  it.each(ROWS.filter(([, e]) => e.length === 0))('%s is display only: no answer', (type) => {
    const field = f(type);
    expect(validateAnswers({ [field.uuid]: [{ text: 'x' }] }, dataOf(field))).toEqual([
      { path: `values.${field.uuid}`, message: expect.stringContaining('display only') },
    ]);
    expect(validateAnswers({ [field.uuid]: null }, dataOf(field))).toEqual([]);
  });
});

describe('timeline elements', () => {
  const modes = [
    ['length', ['timelineLength']],
    ['start_time', ['timelineStartsAt']],
    ['start_and_end_time', ['timelineStartsAt', 'timelineEndsAt']],
  ] as const;

  it('exports the timeline table', () => {
    expect(TIMELINE_ELEMENTS).toEqual(Object.fromEntries(modes.map(([m, e]) => [m, [...e]])));
  });

  it.each(modes)('mode %s allows %j only when timelineEnabled', (mode, extras) => {
    const on = f('text_field', { timelineEnabled: true, timelineSettings: { timelineMode: mode } });
    const entry = Object.fromEntries([['text', 'x'], ...extras.map((e) => [e, sample(e)])]);
    expect(validateAnswers({ [on.uuid]: [entry] }, dataOf(on))).toEqual([]);
    expect(allowedElements(on)).toEqual(['text', ...extras]);

    const off = f('text_field', { timelineSettings: { timelineMode: mode } });
    const problems = validateAnswers({ [off.uuid]: [entry] }, dataOf(off));
    expect(problems.map((p) => p.path).sort()).toEqual(
      extras.map((e) => `values.${off.uuid}[0].${e}`).sort(),
    );
    expect(problems[0]?.message).toMatch(/no timeline/);
  });

  it('rejects a timeline element of another mode', () => {
    const field = f('text_field', {
      timelineEnabled: true,
      timelineSettings: { timelineMode: 'length' },
    });
    expect(
      validateAnswers(
        { [field.uuid]: [{ text: 'x', timelineStartsAt: '7:00 PM' }] },
        dataOf(field),
      ),
    ).toEqual([
      {
        path: `values.${field.uuid}[0].timelineStartsAt`,
        message: expect.stringContaining('length'),
      },
    ]);
  });
});

describe('entries and clearing', () => {
  const single = f('text_field');
  const multi = f('text_box', { allowMultipleEntries: true });

  it('takes more than one entry only with allowMultipleEntries', () => {
    const two = [{ text: 'a' }, { text: 'b' }];
    expect(validateAnswers({ [single.uuid]: two }, dataOf(single))).toEqual([
      { path: `values.${single.uuid}`, message: expect.stringMatching(/single entry/) },
    ]);
    expect(validateAnswers({ [multi.uuid]: two }, dataOf(multi))).toEqual([]);
  });

  it('requires an array of entry objects', () => {
    expect(validateAnswers({ [single.uuid]: { text: 'a' } }, dataOf(single))[0]?.path).toBe(
      `values.${single.uuid}`,
    );
    expect(validateAnswers({ [single.uuid]: ['a'] }, dataOf(single))[0]?.path).toBe(
      `values.${single.uuid}[0]`,
    );
    expect(validateAnswers([], dataOf(single))).toEqual([
      { path: 'values', message: expect.any(String) },
    ]);
  });

  it('accepts null for a whole field and for an element', () => {
    expect(validateAnswers({ [single.uuid]: null }, dataOf(single))).toEqual([]);
    expect(validateAnswers({ [single.uuid]: [{ text: null }] }, dataOf(single))).toEqual([]);
  });

  it('rejects an unknown field uuid', () => {
    expect(validateAnswers({ nope: [{ text: 'x' }] }, dataOf(single))).toEqual([
      { path: 'values.nope', message: 'is not a question of this questionnaire' },
    ]);
  });

  it('leaves answers of an unknown field type unvalidated', () => {
    const odd = f('hologram_field');
    expect(allowedElements(odd)).toBeUndefined();
    const weird = { [odd.uuid]: [{ anything: { nested: true } }, { more: 1 }] };
    expect(validateAnswers(weird, dataOf(odd))).toEqual([]);
    expect(mergeAnswers({}, weird)).toEqual(weird);
  });
});

describe('mergeAnswers', () => {
  it('replaces keys sent, clears nulls and preserves the rest', () => {
    const existing = {
      a: [{ text: 'old a' }],
      b: [{ text: 'keep b' }],
      c: [{ text: 'clear c' }],
    };
    const merged = mergeAnswers(existing, {
      a: [{ text: 'new a', text2: null }],
      c: null,
      d: [{ dropdown: 'x' }],
    });
    expect(merged).toEqual({
      a: [{ text: 'new a' }],
      b: [{ text: 'keep b' }],
      d: [{ dropdown: 'x' }],
    });
    expect(existing.c).toEqual([{ text: 'clear c' }]);
  });
});

describe('song questions', () => {
  const LIST: SuggestedSong[] = [
    {
      songName: 'September',
      songArtistName: 'Earth, Wind & Fire',
      songId: 'a1',
      songProvider: 'alpha',
    },
    { songName: 'At Last', songArtistName: 'Etta James', songId: 'a2', songProvider: 'alpha' },
  ];
  const lookup = (id: number) => (id === 5 ? LIST : undefined);
  const strict = f('song', { suggestionListId: 5, allowCustomSongEntry: false });
  const open = f('song_list', {
    suggestionListId: 5,
    allowCustomSongEntry: true,
    allowMultipleEntries: true,
  });
  const free = f('song');

  it('requires a song from the list when custom entries are off', () => {
    const onList = answers.song(strict.uuid, {
      songName: 'At Last',
      songId: 'a2',
      songSuggestionListId: 5,
    });
    expect(validateAnswers(onList, dataOf(strict), { suggestionListSongs: lookup })).toEqual([]);
    const byName = answers.song(strict.uuid, {
      songName: 'september',
      songArtistName: 'Earth, Wind & Fire',
    });
    expect(validateAnswers(byName, dataOf(strict), { suggestionListSongs: lookup })).toEqual([]);
    const custom = answers.song(strict.uuid, { songName: 'Unlisted', songArtistName: 'Nobody' });
    expect(validateAnswers(custom, dataOf(strict), { suggestionListSongs: lookup })).toEqual([
      {
        path: `values.${strict.uuid}[0].songName`,
        message: expect.stringContaining('suggestion list 5'),
      },
    ]);
    // Without a lookup the list cannot be checked, so the song is not proven to be on it.
    expect(validateAnswers(onList, dataOf(strict))).toHaveLength(1);
  });

  it('accepts custom songs when allowed or when the field has no list', () => {
    const songs = answers.song(open.uuid, [
      { songName: 'Unlisted' },
      { songName: 'At Last', songSuggestionListId: 5 },
    ]);
    expect(validateAnswers(songs, dataOf(open), { suggestionListSongs: lookup })).toEqual([]);
    expect(
      validateAnswers(answers.song(free.uuid, { songName: 'Anything' }), dataOf(free)),
    ).toEqual([]);
  });

  it('writes songSuggestionListId only together with the song, and only the field list', () => {
    const alone = { [open.uuid]: [{ songSuggestionListId: 5 }] };
    expect(validateAnswers(alone, dataOf(open), { suggestionListSongs: lookup })).toEqual([
      {
        path: `values.${open.uuid}[0].songSuggestionListId`,
        message: expect.stringContaining('together'),
      },
    ]);
    const other = answers.song(open.uuid, { songName: 'At Last', songSuggestionListId: 9 });
    expect(
      validateAnswers(other, dataOf(open), { suggestionListSongs: lookup })[0]?.message,
    ).toMatch(/must be 5/);
    const badId = answers.song(free.uuid, { songName: 'X', songSuggestionListId: 'five' });
    expect(validateAnswers(badId, dataOf(free))[0]?.path).toBe(
      `values.${free.uuid}[0].songSuggestionListId`,
    );
  });
});

describe('answers builders', () => {
  it('build patches that validate against their field types', () => {
    const fields = [
      f('text_field'),
      f('quadruple_text_field'),
      f('dropdown'),
      f('radio_group'),
      f('checkbox_group'),
      f('image_uploader_field'),
      f('e_sign_field'),
      f('beta_playlist'),
      f('music_playlist'),
      f('text_box', {
        timelineEnabled: true,
        timelineSettings: { timelineMode: 'start_and_end_time' },
      }),
    ];
    const patch = answers.merge(
      answers.text('u-text_field', 'hello'),
      answers.texts('u-quadruple_text_field', ['a', 'b', 'c', 'd']),
      answers.dropdown('u-dropdown', 'Cocktail'),
      answers.radio('u-radio_group', 'Yes'),
      answers.checkbox('u-checkbox_group', ['Camera']),
      answers.file('u-image_uploader_field', 'https://files.example/logo.png'),
      answers.eSign('u-e_sign_field', {
        signer: 'Jo',
        timestamp: '2026-01-01T00:00:00Z',
        ip: '1.2.3.4',
      }),
      answers.playlist('u-beta_playlist', 'beta', 'https://beta.example/p/1'),
      answers.playlist('u-music_playlist', 'musicPlaylist', 'https://music.example/p/1'),
      answers.text('u-text_box', 'Dinner', {
        timelineStartsAt: '7:00 PM',
        timelineEndsAt: '8:00 PM',
      }),
    );
    expect(patch['u-quadruple_text_field']).toEqual([
      { text: 'a', text2: 'b', text3: 'c', text4: 'd' },
    ]);
    expect(validateAnswers(patch, dataOf(...fields))).toEqual([]);
    expect(answers.clear('u-text_field')).toEqual({ 'u-text_field': null });
  });
});
