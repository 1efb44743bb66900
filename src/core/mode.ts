import type { components } from '../../generated/api.ts';

/** What the file is to hold: `video` (picture and sound), `audio` (sound only), `mute` (picture only). */
export type Mode = components['schemas']['Mode'];

/** The audio format asked for with mode `audio`. */
export type AudioFormat = components['schemas']['AudioFormat'];
