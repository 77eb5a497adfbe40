import type { StoredRecord } from '../db.js';
import type { Handlers, SandboxContext } from '../context.js';
import { ok } from '../envelope.js';
import { forbidden, notFound } from '../errors.js';
import { findVisibleEvent, getEvent } from './events-model.js';

/**
 * Notes staff write on an event. The API only deletes them (author only); they are made in
 * the business's own screens, so the admin API and seed call createEventNote.
 *
 * Record type 'event_note' (parentId = event): { id, event_id, user_id (author), text,
 * created_at (UTC ISO) }. The event lists them under relationships.notes as type 'note'.
 */
export interface EventNoteAttrs extends Record<string, unknown> {
  id: number;
  event_id: number;
  user_id: number;
  text: string;
  created_at: string;
}

export function createEventNote(
  ctx: SandboxContext,
  businessId: number,
  eventId: number,
  authorUserId: number,
  text: string,
): StoredRecord<EventNoteAttrs> {
  if (!getEvent(ctx, businessId, eventId)) {
    throw new Error(`event ${eventId} does not exist in business ${businessId}`);
  }
  return ctx.records.insert<EventNoteAttrs>(
    'event_note',
    businessId,
    (id) => ({ id, event_id: eventId, user_id: authorUserId, text, created_at: ctx.clock.iso() }),
    { parentId: eventId },
  );
}

export function eventNotesHandlers(): Handlers {
  return {
    'eventNotes.delete': ({ ctx, caller, params }) => {
      const event = findVisibleEvent(ctx, caller, params.event_id);
      const note = ctx.records.get<EventNoteAttrs>(
        'event_note',
        caller.businessId,
        Number(params.id),
      );
      if (!note || note.parentId !== event.id) throw notFound('Note', params.id ?? '');
      if (note.attrs.user_id !== caller.userId) {
        throw forbidden('not_note_author', 'Only the author of a note can delete it');
      }
      ctx.records.softDelete(note, ctx.clock.iso());
      return ok();
    },
  };
}
