// The DRM systems a stream may name, by the identifiers HLS (KEYFORMAT) and DASH
// (ContentProtection@schemeIdUri) give them, so that a refusal says which one it met. Identifiers
// are compared in lower case: UUIDs are written in either.

export const KEY_SYSTEMS: Readonly<Record<string, string>> = {
  'urn:mpeg:dash:mp4protection:2011': 'Common Encryption',
  'com.apple.streamingkeydelivery': 'FairPlay',
  'urn:uuid:94ce86fb-07ff-4f43-adb8-93d2fa968ca2': 'FairPlay',
  'urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed': 'Widevine',
  'com.microsoft.playready': 'PlayReady',
  'urn:uuid:9a04f079-9840-4286-ab92-e65be0885f95': 'PlayReady',
  'urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e': 'ClearKey',
  'urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b': 'ClearKey',
};

/** The name of the key system an identifier stands for, when it is one of the known ones. */
export function keySystemName(identifier: string): string | undefined {
  return KEY_SYSTEMS[identifier.toLowerCase()];
}
