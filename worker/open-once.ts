/**
 * A resource opened on first use and shared after, for a process's store connections: a
 * failed open is forgotten, so the next use tries again (a database that was down at start).
 */
export function openOnce<T extends { close(): Promise<void> }>(
  open: () => Promise<T>,
): { get(): Promise<T>; close(): Promise<void> } {
  let opened: Promise<T> | undefined;
  return {
    get() {
      if (!opened) {
        const opening = open();
        opened = opening;
        opening.catch(() => {
          if (opened === opening) opened = undefined;
        });
      }
      return opened;
    },
    async close() {
      const was = opened;
      opened = undefined;
      if (was) await was.then((resource) => resource.close()).catch(() => undefined);
    },
  };
}
