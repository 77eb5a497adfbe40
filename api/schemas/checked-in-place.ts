import { z } from 'zod';

/**
 * Records checked in place: the object that came is the object passed on. zod copies every
 * field of a loose object into a new one (the named ones and all the others), and over a page
 * of 100 leads (67 attributes, 36 of them named) that copy was most of the page's validation
 * time and a large share of what a mirror pass allocated.
 */

/**
 * Any JSON object, checked to be one and passed on as it came (relationships, sideloaded
 * attributes): `z.record(z.string(), z.unknown())` accepts the same but copies every key.
 */
export const looseRecordSchema = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  { error: 'expected an object' },
);

/** Kinds whose parse returns the value it was given (or, for containers, an equal copy). */
const LEAVES = new Set([
  'string',
  'number',
  'int',
  'boolean',
  'bigint',
  'null',
  'undefined',
  'any',
  'unknown',
  'literal',
  'enum',
  'nan',
  'template_literal',
  'custom',
]);

type Def = z.core.$ZodTypeDef & {
  checks?: readonly z.core.$ZodCheck[];
  innerType?: z.core.$ZodType;
  element?: z.core.$ZodType;
  options?: readonly z.core.$ZodType[];
  shape?: Readonly<Record<string, z.core.$ZodType>>;
  catchall?: z.core.$ZodType;
  keyType?: z.core.$ZodType;
  valueType?: z.core.$ZodType;
  items?: readonly z.core.$ZodType[];
  rest?: z.core.$ZodType | null;
  left?: z.core.$ZodType;
  right?: z.core.$ZodType;
};

/**
 * Whether `schema`'s output equals its input for every value it accepts: no transform,
 * default, catch, pipe, readonly (frozen copy) or overwriting check (trim, toLowerCase...)
 * anywhere in it. Unknown kinds count as changing the value.
 */
export function returnsInput(schema: z.core.$ZodType): boolean {
  const def = schema._zod.def as Def;
  if (def.checks?.some((check) => check._zod.def.check === 'overwrite')) return false;
  const all = (schemas: readonly (z.core.$ZodType | null | undefined)[]) =>
    schemas.every((inner) => !inner || returnsInput(inner));
  switch (def.type) {
    case 'optional':
    case 'nullable':
      return all([def.innerType]);
    case 'array':
      return all([def.element]);
    case 'union':
      return all(def.options ?? []);
    case 'object':
      return all([...Object.values(def.shape ?? {}), def.catchall]);
    case 'record':
      return all([def.keyType, def.valueType]);
    case 'tuple':
      return all([...(def.items ?? []), def.rest]);
    case 'intersection':
      return all([def.left, def.right]);
    default:
      return LEAVES.has(def.type);
  }
}

/**
 * A loose object's named fields checked as it says, its other fields left alone, and the
 * object itself passed on: what `z.looseObject(shape)` accepts, with the same issues, and what
 * it returns (field for field), without the copy. Used only where that holds (`returnsInput`);
 * any other schema is returned as it is.
 */
export function checkedInPlace<A extends z.ZodType>(schema: A): z.ZodType<z.output<A>> {
  if (
    !(schema instanceof z.ZodObject) ||
    !(schema.def.catchall instanceof z.ZodUnknown) ||
    !returnsInput(schema)
  ) {
    return schema as z.ZodType<z.output<A>>;
  }
  const named = z.object(schema.shape);
  return z.custom<z.output<A>>().check((payload) => {
    const result = named.safeParse(payload.value);
    // Finished issues (message and path made) go on as they are; the parent prefixes its path.
    if (!result.success) payload.issues.push(...(result.error.issues as z.core.$ZodRawIssue[]));
  });
}
