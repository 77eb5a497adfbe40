/**
 * The ranges of a five-field cron expression, checked before Temporal is asked: the server
 * answers any number out of range with "CronString does not have 5-7 fields", which names
 * neither the field nor what it allows. Whether the expression ever fires is Temporal's to
 * say (its next action times); this only names a field's number out of range or a bad step.
 */

interface CronField {
  name: string;
  min: number;
  max: number;
  /** Names a field also takes (JAN…DEC, SUN…SAT), numbered from `min`. */
  names?: readonly string[];
}

const FIELDS: readonly CronField[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
  },
  // 7 is Sunday as well as 0, as most cron readers take it.
  { name: 'day of week', min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

function allowed(field: CronField): string {
  const names = field.names ? ` or ${field.names[0]}-${field.names[field.names.length - 1]}` : '';
  return `${field.min}-${field.max}${names}`;
}

/** Why one field's text is out of range, or undefined when each number in it is allowed. */
function fieldProblem(field: CronField, text: string): string | undefined {
  for (const part of text.split(',')) {
    const [range = '', step, ...more] = part.split('/');
    if (more.length > 0 || (step !== undefined && !/^\d+$/.test(step))) {
      return `its step '${part}' is not a number after one '/'`;
    }
    if (step !== undefined && Number(step) === 0) return `its step in '${part}' is 0`;
    if (range === '*' || range === '?') continue;
    for (const bound of range.split('-')) {
      const named = field.names?.indexOf(bound.toUpperCase()) ?? -1;
      if (named >= 0) continue;
      // Anything else (L, W, #, …) is Temporal's to read or refuse.
      if (!/^\d+$/.test(bound)) continue;
      const value = Number(bound);
      if (value < field.min || value > field.max) {
        return `${value} is out of range (allowed: ${allowed(field)})`;
      }
    }
  }
  return undefined;
}

/**
 * Why a five-field cron expression cannot be right, in one line naming the field, or
 * undefined. Other forms (six or seven fields, `@daily`, `@every 5m`) are left to Temporal.
 */
export function cronProblem(expression: string): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== FIELDS.length || expression.trim().startsWith('@')) return undefined;
  for (const [i, field] of FIELDS.entries()) {
    const why = fieldProblem(field, fields[i] ?? '');
    if (why) return `--cron '${expression}': the ${field.name} field (${i + 1} of 5): ${why}`;
  }
  return undefined;
}
