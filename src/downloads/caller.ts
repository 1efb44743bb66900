/**
 * Who makes a request, as the domain sees it. `owner` is what the downloads it creates are recorded
 * under (an HMAC of its API key, or empty for the shared space); `sees` says whether it is held to
 * its own downloads or sees every one (an admin key, or every caller when there are no keys).
 */
export type Caller = { owner: string; sees: 'own' | 'all' };

/** Every caller of a service without API keys: one shared space, as before tenancy. */
export const SHARED_SPACE: Caller = { owner: '', sees: 'all' };
