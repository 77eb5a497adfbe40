import type { Handlers } from './context.js';
import { offeringsHandlers } from './resources/offerings.js';

/** Every resource module's handlers, by route id. A test checks that no route is left out. */
export function allHandlers(): Handlers {
  return {
    ...offeringsHandlers(),
  };
}
