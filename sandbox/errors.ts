/**
 * Errors in the spec's shapes. General: { meta: {status:'error'}, status, reason, message };
 * validation (422): { meta: {status:'error'}, errors: { field: [messages] } }.
 */
export type GeneralErrorBody = {
  meta: { status: 'error' };
  status: string;
  reason: string;
  message: string;
};
export type ValidationErrorBody = { meta: { status: 'error' }; errors: Record<string, string[]> };

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly statusCode: number,
    readonly body: GeneralErrorBody | ValidationErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super('message' in body ? body.message : 'validation failed');
  }
}

export function generalError(
  statusCode: number,
  status: string,
  reason: string,
  message: string,
  headers: Record<string, string> = {},
): ApiError {
  return new ApiError(statusCode, { meta: { status: 'error' }, status, reason, message }, headers);
}

export const unauthorized = (reason: string, message: string): ApiError =>
  generalError(401, 'unauthorized', reason, message);

export const forbidden = (reason: string, message: string): ApiError =>
  generalError(403, 'forbidden', reason, message);

export const notFound = (what: string, id: string | number): ApiError =>
  generalError(404, 'not_found', 'record_not_found', `${what} ${id} was not found`);

export const badRequest = (reason: string, message: string): ApiError =>
  generalError(400, 'bad_request', reason, message);

export function validationError(errors: Record<string, string[]>): ApiError {
  return new ApiError(422, { meta: { status: 'error' }, errors });
}

/** Rails-style full message: "Template name can't be blank". */
export function humanize(field: string): string {
  const words = field.replace(/_id$/, '').replace(/_/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * Collects per-field messages and throws one 422 with all of them. A message starts with the
 * field's label: its humanized name, or what the caller names it (a nested entry's field).
 */
export class FieldErrors {
  private readonly errors: Record<string, string[]> = {};
  /** `prefix` goes before every field's key: the admin API's record edits nest `attributes.`. */
  constructor(private readonly prefix = '') {}
  add(field: string, message: string, label = humanize(field)): this {
    (this.errors[this.prefix + field] ??= []).push(`${label} ${message}`);
    return this;
  }
  /** Fields with at least one message. */
  get count(): number {
    return Object.keys(this.errors).length;
  }
  get empty(): boolean {
    return this.count === 0;
  }
  throwIfAny(): void {
    if (!this.empty) throw validationError(this.errors);
  }
}
