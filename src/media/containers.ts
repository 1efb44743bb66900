// The one table of the media containers the service takes in. A file is one of these when its
// first bytes say so (`sniffed`: the types file-type names it by), or, when its bytes say nothing,
// when its source declared one of `declared`. What the service then does with it comes from here
// only: the type it is served as, the extension of its name, and the one ffmpeg demuxer allowed to
// read it. Nothing a source sends takes their place. test/ffmpeg.test.ts has the bundled ffmpeg
// write each container, and checks that file-type names it as here and that the demuxer here
// reads it back. Left out: what file-type knows but this ffmpeg cannot demux (MIDI, tracker
// modules) or cannot write, so that no row could be checked (QCELP, DSF, Monkey's Audio, and
// Musepack, whose two versions would need two demuxers).

export type Container = {
  /** The Content-Type the file is stored and served with. */
  mime: string;
  /** The extension of its file name. */
  ext: string;
  /** The ffmpeg demuxer forced on it (`-f`), so that ffmpeg never guesses what a file is. */
  demuxer: string;
};

type Entry = Container & { sniffed: readonly string[]; declared: readonly string[] };

export const MP4: Entry = { mime: 'video/mp4', ext: 'mp4', demuxer: 'mov', sniffed: ['video/mp4'], declared: ['video/mp4', 'application/mp4'] };
export const MATROSKA: Entry = {
  mime: 'video/x-matroska',
  ext: 'mkv',
  demuxer: 'matroska',
  sniffed: ['video/matroska'],
  declared: ['video/x-matroska', 'video/matroska', 'audio/x-matroska', 'audio/matroska'],
};
// Written only, for the audio of a codec that has no container of its own here (AC-3, DTS, PCM...):
// never taken in as such, since file-type names every Matroska file video/matroska.
export const MATROSKA_AUDIO: Entry = { mime: 'audio/x-matroska', ext: 'mka', demuxer: 'matroska', sniffed: [], declared: [] };
export const MPEG_TS: Entry = { mime: 'video/mp2t', ext: 'ts', demuxer: 'mpegts', sniffed: ['video/mp2t'], declared: ['video/mp2t'] };

const ENTRIES: readonly Entry[] = [
  MP4,
  MATROSKA,
  MPEG_TS,
  MATROSKA_AUDIO,
  { mime: 'video/x-m4v', ext: 'm4v', demuxer: 'mov', sniffed: ['video/x-m4v'], declared: ['video/x-m4v'] },
  { mime: 'audio/mp4', ext: 'm4a', demuxer: 'mov', sniffed: ['audio/x-m4a', 'audio/mp4'], declared: ['audio/mp4', 'audio/x-m4a', 'audio/m4a'] },
  { mime: 'video/quicktime', ext: 'mov', demuxer: 'mov', sniffed: ['video/quicktime'], declared: ['video/quicktime'] },
  { mime: 'video/3gpp', ext: '3gp', demuxer: 'mov', sniffed: ['video/3gpp'], declared: ['video/3gpp', 'audio/3gpp'] },
  { mime: 'video/3gpp2', ext: '3g2', demuxer: 'mov', sniffed: ['video/3gpp2'], declared: ['video/3gpp2', 'audio/3gpp2'] },
  { mime: 'video/webm', ext: 'webm', demuxer: 'matroska', sniffed: ['video/webm'], declared: ['video/webm', 'audio/webm'] },
  { mime: 'video/x-flv', ext: 'flv', demuxer: 'flv', sniffed: ['video/x-flv'], declared: ['video/x-flv'] },
  { mime: 'video/x-msvideo', ext: 'avi', demuxer: 'avi', sniffed: ['video/vnd.avi'], declared: ['video/x-msvideo', 'video/avi', 'video/vnd.avi'] },
  { mime: 'video/ogg', ext: 'ogv', demuxer: 'ogg', sniffed: ['video/ogg'], declared: ['video/ogg'] },
  { mime: 'audio/ogg', ext: 'ogg', demuxer: 'ogg', sniffed: ['audio/ogg'], declared: ['audio/ogg'] },
  { mime: 'audio/ogg', ext: 'opus', demuxer: 'ogg', sniffed: ['audio/ogg; codecs=opus'], declared: ['audio/opus'] },
  { mime: 'application/ogg', ext: 'ogx', demuxer: 'ogg', sniffed: ['application/ogg'], declared: ['application/ogg'] },
  { mime: 'audio/mpeg', ext: 'mp3', demuxer: 'mp3', sniffed: ['audio/mpeg'], declared: ['audio/mpeg', 'audio/mp3'] },
  { mime: 'audio/aac', ext: 'aac', demuxer: 'aac', sniffed: ['audio/aac'], declared: ['audio/aac', 'audio/x-aac', 'audio/aacp'] },
  { mime: 'audio/ac3', ext: 'ac3', demuxer: 'ac3', sniffed: ['audio/vnd.dolby.dd-raw'], declared: ['audio/ac3', 'audio/vnd.dolby.dd-raw'] },
  { mime: 'audio/flac', ext: 'flac', demuxer: 'flac', sniffed: ['audio/flac'], declared: ['audio/flac', 'audio/x-flac'] },
  { mime: 'audio/wav', ext: 'wav', demuxer: 'wav', sniffed: ['audio/wav'], declared: ['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave'] },
  { mime: 'audio/aiff', ext: 'aiff', demuxer: 'aiff', sniffed: ['audio/aiff'], declared: ['audio/aiff', 'audio/x-aiff'] },
  { mime: 'audio/wavpack', ext: 'wv', demuxer: 'wv', sniffed: ['audio/wavpack'], declared: ['audio/wavpack', 'audio/x-wavpack'] },
  { mime: 'audio/amr', ext: 'amr', demuxer: 'amr', sniffed: ['audio/amr'], declared: ['audio/amr'] },
  { mime: 'audio/x-voc', ext: 'voc', demuxer: 'voc', sniffed: ['audio/x-voc'], declared: ['audio/x-voc'] },
  { mime: 'application/mxf', ext: 'mxf', demuxer: 'mxf', sniffed: ['application/mxf'], declared: ['application/mxf'] },
  // `application/vnd.ms-asf` is file-type's name for an ASF header whose streams it did not see.
  {
    mime: 'video/x-ms-asf',
    ext: 'asf',
    demuxer: 'asf',
    sniffed: ['video/x-ms-asf', 'application/vnd.ms-asf'],
    declared: ['video/x-ms-asf', 'video/x-ms-wmv', 'application/vnd.ms-asf'],
  },
  { mime: 'audio/x-ms-wma', ext: 'wma', demuxer: 'asf', sniffed: ['audio/x-ms-asf'], declared: ['audio/x-ms-wma', 'audio/x-ms-asf'] },
  // file-type's plain `video/mpeg` is left out: it also names a bare MPEG video stream, which is
  // not a program stream and which the `mpeg` demuxer does not read.
  { mime: 'video/mpeg', ext: 'mpg', demuxer: 'mpeg', sniffed: ['video/mp1s', 'video/mp2p'], declared: ['video/mpeg'] },
  { mime: 'application/vnd.rn-realmedia', ext: 'rm', demuxer: 'rm', sniffed: ['application/vnd.rn-realmedia'], declared: ['application/vnd.rn-realmedia'] },
];

function index(key: 'sniffed' | 'declared'): Map<string, Container> {
  const byType = new Map<string, Container>();
  for (const entry of ENTRIES) {
    for (const type of entry[key]) byType.set(type, entry);
  }
  return byType;
}

const BY_SNIFFED = index('sniffed');
const BY_DECLARED = index('declared');

/** The container file-type's `mime` names; null for anything else (an image, XML, a container ffmpeg is not let read). */
export function containerOfSniffed(mime: string): Container | null {
  return BY_SNIFFED.get(mime.toLowerCase()) ?? null;
}

/** The container a declared media type (its essence, lower-cased) names; null when the table does not know it. */
export function containerOfDeclared(essence: string): Container | null {
  return BY_DECLARED.get(essence) ?? null;
}

const SERVED = new Set(ENTRIES.map((entry) => entry.mime));

/** The type a stored file is served as: its row's, when that is one of the table's (rows written before the table may hold anything). */
export function servedType(stored: string | null): string {
  return stored && SERVED.has(stored) ? stored : 'application/octet-stream';
}
