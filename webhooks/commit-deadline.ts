/**
 * A store's commit, given up on after `ms`: the receiver answers within the sender's timeout
 * whatever the store does. The commit itself goes on (it may still land: the inbox's dedupe
 * makes a later copy count once), and its failure after the deadline is nobody's to handle.
 * One place for it: the spooled store and the receiver each race a commit this way.
 */
export async function committedWithin<T>(commit: Promise<T>, ms: number): Promise<T> {
  commit.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      commit,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the store did not commit within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
