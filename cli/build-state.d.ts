// Types of cli/build-state.js (plain JavaScript: the launcher runs it before any build).
export declare const ROOT: string;
export declare const SOURCE_FOLDERS: readonly string[];
export declare const STAMP_FILE: string;
export declare function sourceFiles(root?: string): string[];
export declare function fileStates(
  files: readonly string[],
  root?: string,
): [string, number, number][];
export declare function isFresh(dist?: string, root?: string): boolean;
