/** The value of a JSON text, or undefined when it does not parse: for text that may be damaged or hostile. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
