import { UserError } from './errors.js';

/*
 * Secrets a command takes: from a setting, from standard input, or (with a warning) typed after
 * a flag. Apart from the flag parsers (options.ts), which every command's words load: this
 * one loads the configuration's errors, and only a command that runs needs it.
 */

/** Standard input to its end, trimmed (a secret piped in, a signing secret). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

/** The value of a secret flag that says: read it from standard input. */
export const FROM_STDIN = '-';

/** A flag that takes a secret, and where else the secret can come from. */
export interface SecretFlag {
  /** `--api-key` */
  flag: string;
  /** The setting read when the flag is not given a value, e.g. `EBS_API_KEY`. */
  env: string;
  /** What it is, for messages: `integration key`. */
  what: string;
}

/**
 * A secret for a command. The safe ways: the environment (`fallback`, from `spec.env`; no
 * flag or the flag without a value) or standard input (`--flag -`). A value typed after the
 * flag still works, but it shows in `ps` and in shell history, so using one prints one
 * warning line naming the safer ways (never the secret). `check` says why a value is not
 * allowed; a refused value is refused before any warning.
 */
export async function secretFrom(
  given: string | boolean | undefined,
  fallback: string | undefined,
  spec: SecretFlag,
  check: (value: string) => string | undefined = () => undefined,
): Promise<string | undefined> {
  let value: string | undefined;
  if (given === FROM_STDIN) {
    value = await readStdin();
    if (!value) {
      throw new UserError(
        `${spec.flag} ${FROM_STDIN} read nothing from standard input: pipe the ${spec.what} in, or set ${spec.env}`,
        2,
      );
    }
  } else if (typeof given === 'string') {
    value = given;
  } else {
    // From its setting: checked as the flag is, and named by the setting's name.
    const problem = fallback === undefined ? undefined : check(fallback);
    if (problem) throw new UserError(`${spec.env} is not allowed: ${problem}`, 2);
    return fallback;
  }
  const problem = check(value);
  if (problem) throw new UserError(`${spec.flag} is not allowed: ${problem}`, 2);
  if (given !== FROM_STDIN) {
    process.stderr.write(
      `ebsync: warning: ${spec.flag} with a value puts the ${spec.what} where ps and shell history show it; set ${spec.env}, or pass ${spec.flag} ${FROM_STDIN} and give it on standard input\n`,
    );
  }
  return value;
}
