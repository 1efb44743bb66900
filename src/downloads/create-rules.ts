import type { components } from '../../generated/api.ts';
import { AddressPolicy } from '../net/address-policy.ts';

// What makes a request for a download valid beyond the contract's schema, which the HTTP layer
// has checked already: one place decides, for every way a download can be asked for.

export type CreateDownloadInput = components['schemas']['CreateDownload'];

/** A request the schema lets through that cannot be a download: `field` is its JSON pointer. */
export class InvalidDownloadRequest extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
    detail = 'The request is invalid.',
  ) {
    super(detail);
  }
}

export type CreateRules = { allowPrivateAddresses: ConstructorParameters<typeof AddressPolicy>[0]; webhooks: boolean };

/**
 * The schema's `uri` format is RFC 3986 syntax; what the fetcher will use is the WHATWG URL parser,
 * which also refuses what the syntax allows but no request could go to (a port over 65535, no host);
 * port 0 it takes, and nothing listens there either.
 */
function parseHttpUrl(value: string, field: string): URL {
  try {
    const url = new URL(value);
    if (url.hostname && url.port !== '0') return url;
  } catch {
    // Answered below, like a URL without a host.
  }
  throw new InvalidDownloadRequest(field, 'must be an http(s) URL with a host');
}

export class CreateRequestCheck {
  private readonly addresses: AddressPolicy;

  constructor(private readonly rules: CreateRules) {
    this.addresses = new AddressPolicy(rules.allowPrivateAddresses);
  }

  /** Throws InvalidDownloadRequest for the first rule `input` breaks. */
  check(input: CreateDownloadInput): void {
    this.checkSource(input.url, '/body/url');
    this.checkTemplate(input);
  }

  /** A URL to fetch from, at `field`. */
  checkSource(value: string, field: string): void {
    // The worker checks every address it connects to; what is private on its face is refused here.
    if (this.refusesOnItsFace(parseHttpUrl(value, field))) {
      throw new InvalidDownloadRequest(
        field,
        'must not point to a private or loopback address',
        'The URL points to a private or loopback address, which this server does not fetch from.',
      );
    }
  }

  /** Whether the address policy refuses `url` before any lookup (a private or loopback literal). */
  refusesOnItsFace(url: URL): boolean {
    return this.addresses.refusesOnItsFace(url);
  }

  /** What a download is to be made into, and where it is announced: the rules beyond the schema. */
  checkTemplate(input: Omit<CreateDownloadInput, 'url'>): void {
    if (input.audio_format !== undefined && input.mode !== 'audio') {
      throw new InvalidDownloadRequest(
        '/body/audio_format',
        'needs mode "audio"',
        'audio_format applies to mode "audio" only; add "mode": "audio" or leave audio_format out.',
      );
    }
    if (input.subtitles && input.subtitles.length > 1 && input.subtitles.some((language) => language.toLowerCase() === 'all')) {
      throw new InvalidDownloadRequest(
        '/body/subtitles',
        'must be ["all"] alone, or language tags',
        'subtitles takes either ["all"] or a list of language tags, not both.',
      );
    }
    if (input.clip && input.clip.end_seconds != null && input.clip.start_seconds >= input.clip.end_seconds) {
      throw new InvalidDownloadRequest(
        '/body/clip',
        'start_seconds must be below end_seconds',
        'The clip must start before it ends: start_seconds must be below end_seconds.',
      );
    }
    if (input.callback_url !== undefined) this.checkCallback(input.callback_url);
  }

  private checkCallback(value: string): void {
    if (!this.rules.webhooks) {
      throw new InvalidDownloadRequest(
        '/body/callback_url',
        'needs the server setting WEBHOOK_SECRET',
        'This server sends no webhooks: callback_url needs the server setting WEBHOOK_SECRET, which is not set.',
      );
    }
    const callback = parseHttpUrl(value, '/body/callback_url');
    // The address is shown to whoever reads the download; and deliveries send no credentials.
    if (callback.username || callback.password) {
      throw new InvalidDownloadRequest(
        '/body/callback_url',
        'must not carry a user name or password',
        'The callback_url carries a user name or password, which would be shown with the download; authenticate the webhook by its signature instead.',
      );
    }
    if (this.addresses.refusesOnItsFace(callback)) {
      throw new InvalidDownloadRequest(
        '/body/callback_url',
        'must not point to a private or loopback address',
        'The callback_url points to a private or loopback address, which this server does not send webhooks to.',
      );
    }
  }
}
