// mpd-parser ships no types: this declares the part of its output the planner reads. The shapes
// follow what its `parse` returns (an m3u8-parser-like manifest), not the DASH spec.

declare module 'mpd-parser' {
  /** Offsets past Number.MAX_SAFE_INTEGER come back as bigint. */
  export type ParsedByteRange = { offset: number | bigint; length: number | bigint };

  export type ParsedSegment = {
    /** As written in the MPD (empty when the MPD gives only a range of the BaseURL). */
    uri: string;
    resolvedUri: string;
    byterange?: ParsedByteRange;
    /** In seconds, from @duration or the SegmentTimeline over the timescale; whatever the MPD makes of it (NaN, negative). */
    duration?: number;
    /** The initialization segment. */
    map?: { uri: string; resolvedUri: string; byterange?: ParsedByteRange };
  };

  export type ParsedPlaylist = {
    attributes: {
      /** The Representation@id. */
      NAME: string;
      BANDWIDTH?: number;
      CODECS?: string;
      RESOLUTION?: { width?: number; height?: number };
    };
    /** The Representation's BaseURL, resolved. */
    resolvedUri: string;
    /** Absent when the Representation has no segment information at all. */
    segments?: ParsedSegment[];
    /** Set (with `segments` empty) for a SegmentBase with an indexRange: the segments are in that sidx. */
    sidx?: ParsedSegment;
  };

  /** One language (or label) of audio; `default` marks Role "main", else the first one. */
  export type ParsedAudioGroup = { language: string; default: boolean; playlists: ParsedPlaylist[] };

  export type ParsedManifest = {
    /** Video Representations. */
    playlists?: ParsedPlaylist[];
    /** Audio by language; text (subtitles) by label or language, `language` possibly unset. */
    mediaGroups?: {
      AUDIO?: { audio?: Record<string, ParsedAudioGroup> };
      SUBTITLES?: { subs?: Record<string, { language?: string; playlists: ParsedPlaylist[] }> };
    };
  };

  /** One `<S>` of a SegmentTimeline, its attributes as numbers. */
  export type TimelineEntry = { t?: number; d?: number; r?: number };

  /** A Representation with every attribute it inherits, before its segments are made. */
  export type RepresentationInfo = {
    attributes: Record<string, unknown>;
    segmentInfo: {
      template?: Record<string, unknown>;
      list?: Record<string, unknown>;
      base?: Record<string, unknown>;
      segmentTimeline?: TimelineEntry[];
    };
  };

  export type InheritedManifest = { representationInfo: RepresentationInfo[]; locations?: unknown; contentSteeringInfo?: unknown; eventStream?: unknown };

  /** `parse` is these three steps; the planner counts what the second would make before taking it. */
  export function inheritAttributes(mpd: MpdElement, options?: { manifestUri?: string }): InheritedManifest;
  export type DashPlaylist = { attributes: Record<string, unknown> };
  export function toPlaylists(representations: RepresentationInfo[]): DashPlaylist[];
  export function toM3u8(input: { dashPlaylists: DashPlaylist[]; locations?: unknown; contentSteering?: unknown; eventStream?: unknown }): ParsedManifest;

  /** The subset of an @xmldom/xmldom Element the planner walks. */
  export type MpdElement = {
    tagName: string;
    getAttribute(name: string): string | null;
    getElementsByTagName(name: string): ArrayLike<MpdElement>;
    /** Text and comment nodes have no tagName. */
    childNodes: ArrayLike<{ tagName?: string }>;
    parentNode: MpdElement | null;
  };

  /** Parses the XML; throws when it is not an MPD. */
  export function stringToMpdXml(manifest: string): MpdElement;
}
