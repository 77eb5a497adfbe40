/**
 * Questionnaire answers as the spec defines them: `values` maps a field uuid to an array of
 * entries (one per repeat), each entry maps element names to values. Which element names a
 * field accepts depends on its type (ELEMENT_NAMES) and, for timeline-enabled fields, on its
 * timeline mode (TIMELINE_ELEMENTS). Pure: shared by the API client and the sandbox.
 */

export const DISPLAY_ONLY_TYPES = [
  'header',
  'subheader',
  'separator',
  'plain_text',
  'rich_text',
  'static_image',
] as const;

export const SONG_ELEMENTS = [
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
] as const;

/** Element names by field type; display-only types take no answer (empty list). */
export const ELEMENT_NAMES = {
  header: [],
  subheader: [],
  separator: [],
  plain_text: [],
  rich_text: [],
  static_image: [],
  text_field: ['text'],
  double_text_field: ['text', 'text2'],
  triple_text_field: ['text', 'text2', 'text3'],
  quadruple_text_field: ['text', 'text2', 'text3', 'text4'],
  text_box: ['text'],
  dropdown: ['dropdown'],
  radio_group: ['radio'],
  checkbox: ['checkbox'],
  checkbox_group: ['checkbox'],
  date_field: ['text'],
  time_field: ['text'],
  color_picker_field: ['text'],
  file_uploader_field: ['file'],
  image_uploader_field: ['file'],
  e_sign_field: ['signer', 'timestamp', 'ip'],
  song: SONG_ELEMENTS,
  song_list: SONG_ELEMENTS,
  alpha_playlist: ['alpha'],
  beta_playlist: ['beta'],
  gamma_playlist: ['gamma'],
  music_playlist: ['musicPlaylist'],
} as const satisfies Record<string, readonly string[]>;

export type KnownFieldType = keyof typeof ELEMENT_NAMES;
export type DisplayOnlyFieldType = (typeof DISPLAY_ONLY_TYPES)[number];

/** Extra elements of a field with timelineEnabled, by timelineSettings.timelineMode. */
export const TIMELINE_ELEMENTS = {
  length: ['timelineLength'],
  start_time: ['timelineStartsAt'],
  start_and_end_time: ['timelineStartsAt', 'timelineEndsAt'],
} as const satisfies Record<string, readonly string[]>;

export type TimelineMode = keyof typeof TIMELINE_ELEMENTS;

const ALL_TIMELINE_ELEMENTS = new Set<string>([
  'timelineLength',
  'timelineStartsAt',
  'timelineEndsAt',
]);

export interface QuestionnaireField {
  uuid: string;
  /** A known type, or any other string (unknown to the spec: answers left untouched). */
  type: KnownFieldType | (string & {});
  name: string;
  allowMultipleEntries?: boolean;
  timelineEnabled?: boolean;
  timelineSettings?: { timelineMode?: TimelineMode | (string & {}) };
  suggestionListId?: number | null;
  allowCustomSongEntry?: boolean;
  [extra: string]: unknown;
}

export interface FieldGroup {
  name: string;
  fields: QuestionnaireField[];
  [extra: string]: unknown;
}

export interface QuestionnaireData {
  fieldGroups: FieldGroup[];
}

export type ElementValue = string | number | boolean | null | readonly unknown[] | object;
/** One repeat of an answer: element name → value. */
export type AnswerEntry = Record<string, ElementValue>;
/** Stored answers: field uuid → entries. */
export type AnswerValues = Record<string, AnswerEntry[]>;
/** A patch of answers: a key sent replaces the field's answer, null clears it. */
export type AnswerPatch = Record<string, AnswerEntry[] | null>;

export interface SuggestedSong {
  songName?: string | null;
  songArtistName?: string | null;
  songId?: string | number | null;
  songProvider?: string | null;
  [extra: string]: unknown;
}

export interface AnswerProblem {
  /** 'values', 'values.<uuid>', 'values.<uuid>[0]' or 'values.<uuid>[0].<element>' */
  path: string;
  message: string;
}

export interface ValidateOptions {
  /** Songs of a suggestion list, or undefined when the list does not exist. */
  suggestionListSongs?: (listId: number) => readonly SuggestedSong[] | undefined;
}

export function isKnownFieldType(type: string): type is KnownFieldType {
  return Object.prototype.hasOwnProperty.call(ELEMENT_NAMES, type);
}

export function isDisplayOnly(type: string): boolean {
  return (DISPLAY_ONLY_TYPES as readonly string[]).includes(type);
}

/** The element names an answer to this field may carry (type elements plus timeline extras). */
export function allowedElements(field: QuestionnaireField): readonly string[] | undefined {
  if (!isKnownFieldType(field.type)) return undefined;
  const base: readonly string[] = ELEMENT_NAMES[field.type];
  if (base.length === 0 || !field.timelineEnabled) return base;
  const mode = field.timelineSettings?.timelineMode;
  const extra: readonly string[] =
    mode !== undefined && Object.prototype.hasOwnProperty.call(TIMELINE_ELEMENTS, mode)
      ? TIMELINE_ELEMENTS[mode as TimelineMode]
      : [];
  return [...base, ...extra];
}

export function fieldsByUuid(data: QuestionnaireData): Map<string, QuestionnaireField> {
  const map = new Map<string, QuestionnaireField>();
  for (const group of data.fieldGroups)
    for (const field of group.fields) map.set(field.uuid, field);
  return map;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isBlank = (v: unknown): boolean => v === undefined || v === null || v === '';

function sameText(a: unknown, b: unknown): boolean {
  return (
    typeof a === 'string' &&
    typeof b === 'string' &&
    a.trim().toLowerCase() === b.trim().toLowerCase()
  );
}

/** A song is on a list when its songId matches, or (without ids) its name and artist do. */
function songOnList(entry: Record<string, unknown>, songs: readonly SuggestedSong[]): boolean {
  return songs.some((song) => {
    if (!isBlank(entry.songId) && !isBlank(song.songId)) {
      return String(entry.songId) === String(song.songId);
    }
    return (
      sameText(entry.songName, song.songName) &&
      (isBlank(entry.songArtistName) || sameText(entry.songArtistName, song.songArtistName))
    );
  });
}

function checkElementValue(name: string, value: unknown): string | undefined {
  if (value === null) return undefined;
  switch (name) {
    case 'songSuggestionListId':
      return (typeof value === 'number' && Number.isInteger(value) && value > 0) ||
        (typeof value === 'string' && /^\d+$/.test(value))
        ? undefined
        : 'must be a suggestion list id (integer)';
    case 'songDurationSeconds':
    case 'timelineLength':
      return typeof value === 'number' && Number.isFinite(value) && value >= 0
        ? undefined
        : 'must be a non-negative number';
    case 'timelineStartsAt':
    case 'timelineEndsAt':
      return typeof value === 'string' ? undefined : 'must be a string';
    default:
      return undefined;
  }
}

function validateSongEntry(
  field: QuestionnaireField,
  entry: Record<string, unknown>,
  at: string,
  options: ValidateOptions,
  problems: AnswerProblem[],
): void {
  const hasSong = !isBlank(entry.songName) || !isBlank(entry.songId);
  const listIdSent = entry.songSuggestionListId;
  if (!isBlank(listIdSent)) {
    if (!hasSong) {
      problems.push({
        path: `${at}.songSuggestionListId`,
        message: 'must be written together with the song details (songName or songId)',
      });
    }
    const fieldList = field.suggestionListId;
    if (fieldList !== undefined && fieldList !== null && String(listIdSent) !== String(fieldList)) {
      problems.push({
        path: `${at}.songSuggestionListId`,
        message: `must be ${fieldList}, the suggestion list of this question`,
      });
    }
  }
  const listId = field.suggestionListId;
  if (!hasSong || listId === undefined || listId === null || field.allowCustomSongEntry !== false) {
    return;
  }
  const songs = options.suggestionListSongs?.(listId);
  if (!songs || !songOnList(entry, songs)) {
    problems.push({
      path: `${at}.${isBlank(entry.songName) ? 'songId' : 'songName'}`,
      message: `must be a song on suggestion list ${listId} (custom songs are not allowed for this question)`,
    });
  }
}

/**
 * Problems with a `values` patch against a questionnaire's questions; empty when valid.
 * Answers to field types the spec does not know are neither validated nor rejected.
 */
export function validateAnswers(
  values: unknown,
  data: QuestionnaireData,
  options: ValidateOptions = {},
): AnswerProblem[] {
  if (!isPlainObject(values)) {
    return [{ path: 'values', message: 'must be an object keyed by question uuid' }];
  }
  const problems: AnswerProblem[] = [];
  const fields = fieldsByUuid(data);
  for (const [uuid, answer] of Object.entries(values)) {
    const at = `values.${uuid}`;
    const field = fields.get(uuid);
    if (!field) {
      problems.push({ path: at, message: 'is not a question of this questionnaire' });
      continue;
    }
    if (answer === null) continue;
    const allowed = allowedElements(field);
    if (allowed === undefined) continue;
    if (allowed.length === 0) {
      problems.push({
        path: at,
        message: `takes no answer (${field.type} is display only)`,
      });
      continue;
    }
    if (!Array.isArray(answer)) {
      problems.push({ path: at, message: 'must be an array of entries (one per repeat)' });
      continue;
    }
    if (answer.length > 1 && !field.allowMultipleEntries) {
      problems.push({
        path: at,
        message: 'takes a single entry (the question does not allow multiple entries)',
      });
    }
    const allowedSet = new Set(allowed);
    answer.forEach((entry: unknown, index) => {
      const entryAt = `${at}[${index}]`;
      if (!isPlainObject(entry)) {
        problems.push({ path: entryAt, message: 'must be an object of element values' });
        return;
      }
      for (const [name, value] of Object.entries(entry)) {
        if (!allowedSet.has(name)) {
          const timeline = ALL_TIMELINE_ELEMENTS.has(name);
          problems.push({
            path: `${entryAt}.${name}`,
            message: timeline
              ? field.timelineEnabled
                ? `is not an element of timeline mode ${String(field.timelineSettings?.timelineMode ?? '(none)')}`
                : 'is a timeline element and the question has no timeline'
              : `is not an element of a ${field.type} question`,
          });
          continue;
        }
        const bad = checkElementValue(name, value);
        if (bad) problems.push({ path: `${entryAt}.${name}`, message: bad });
      }
      if (field.type === 'song' || field.type === 'song_list') {
        validateSongEntry(field, entry, entryAt, options, problems);
      }
    });
  }
  return problems;
}

/**
 * Applies a patch onto stored answers: a key sent replaces that field's answer, null removes
 * it, and fields not sent are preserved. Null elements inside an entry are dropped (cleared).
 */
export function mergeAnswers(
  existing: Readonly<AnswerValues>,
  patch: Readonly<AnswerPatch>,
): AnswerValues {
  const merged: AnswerValues = { ...existing };
  for (const [uuid, answer] of Object.entries(patch)) {
    if (answer === null) {
      delete merged[uuid];
      continue;
    }
    merged[uuid] = answer.map((entry) =>
      Object.fromEntries(Object.entries(entry).filter(([, v]) => v !== null)),
    );
  }
  return merged;
}

export type SongAnswer = Partial<Record<(typeof SONG_ELEMENTS)[number], string | number | null>>;
export type TimelineAnswer = Partial<
  Record<'timelineLength' | 'timelineStartsAt' | 'timelineEndsAt', string | number | null>
>;

const one = (uuid: string, entry: AnswerEntry): AnswerPatch => ({ [uuid]: [entry] });

/** Typed builders of answer patches; combine several with answers.merge(...). */
export const answers = {
  /** text_field, text_box, date_field, time_field, color_picker_field */
  text: (uuid: string, text: string, timeline: TimelineAnswer = {}): AnswerPatch =>
    one(uuid, { text, ...timeline }),
  /** double/triple/quadruple_text_field: text, text2, text3, text4 in order */
  texts: (uuid: string, texts: readonly string[]): AnswerPatch =>
    one(uuid, Object.fromEntries(texts.map((t, i) => [i === 0 ? 'text' : `text${i + 1}`, t]))),
  dropdown: (uuid: string, dropdown: string): AnswerPatch => one(uuid, { dropdown }),
  radio: (uuid: string, radio: string): AnswerPatch => one(uuid, { radio }),
  /** checkbox (boolean) and checkbox_group (chosen options) */
  checkbox: (uuid: string, checkbox: boolean | readonly string[]): AnswerPatch =>
    one(uuid, { checkbox }),
  /** file_uploader_field, image_uploader_field */
  file: (uuid: string, file: string): AnswerPatch => one(uuid, { file }),
  eSign: (uuid: string, sign: { signer: string; timestamp: string; ip: string }): AnswerPatch =>
    one(uuid, { ...sign }),
  /** song and song_list; several songs make several entries (needs allowMultipleEntries) */
  song: (uuid: string, songs: SongAnswer | readonly SongAnswer[]): AnswerPatch => ({
    [uuid]: (Array.isArray(songs) ? songs : [songs]).map((s: SongAnswer) => ({ ...s })),
  }),
  playlist: (
    uuid: string,
    provider: 'alpha' | 'beta' | 'gamma' | 'musicPlaylist',
    url: string,
  ): AnswerPatch => one(uuid, { [provider]: url }),
  /** Any entries, for repeats or types without a builder */
  entries: (uuid: string, entries: readonly AnswerEntry[]): AnswerPatch => ({
    [uuid]: entries.map((e) => ({ ...e })),
  }),
  clear: (uuid: string): AnswerPatch => ({ [uuid]: null }),
  merge: (...patches: readonly AnswerPatch[]): AnswerPatch =>
    patches.reduce<AnswerPatch>((all, p) => ({ ...all, ...p }), {}),
};
