import './style.css';
import { ProblemError, type CreateDownload, type Download } from '../../client/index.ts';
import { DownloadCard, sentenceOf } from './download-card.ts';
import { LiveCards } from './live.ts';
import { clientFor, storedKey, storeKey } from './session.ts';

// The page: a form that creates downloads, and the recent downloads, newest first, each live.

const PAGE_SIZE = 10;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $<HTMLFormElement>('create');
const urlInput = $<HTMLInputElement>('url');
const quality = $<HTMLSelectElement>('quality');
const mode = $<HTMLSelectElement>('mode');
const subtitles = $<HTMLInputElement>('subtitles');
const filename = $<HTMLInputElement>('filename');
const keyRow = $<HTMLDivElement>('key-row');
const keyInput = $<HTMLInputElement>('api-key');
const submit = $<HTMLButtonElement>('submit');
const formError = $<HTMLParagraphElement>('form-error');
const list = $<HTMLUListElement>('downloads');
const listNote = $<HTMLParagraphElement>('list-note');
const more = $<HTMLButtonElement>('more');
const announcer = $<HTMLParagraphElement>('announce');

/** `en, pt-BR` as the list of tags it names. */
function languagesOf(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((tag) => tag.trim())
    .filter(Boolean);
}

keyInput.value = storedKey();
if (keyInput.value) keyRow.hidden = false;
const client = () => clientFor(keyInput.value.trim());
const cards = new Map<string, DownloadCard>();
const live = new LiveCards(client);
let cursor: string | null = null;

const announce = (sentence: string) => (announcer.textContent = sentence);

function show(download: Download, where: 'top' | 'bottom'): DownloadCard | undefined {
  if (cards.has(download.id)) return undefined;
  const card = new DownloadCard(download, client, announce);
  cards.set(download.id, card);
  if (where === 'top') list.prepend(card.node);
  else list.append(card.node);
  live.add(card, where === 'top');
  return card;
}

function clearList(): void {
  live.clear();
  cards.clear();
  list.replaceChildren();
}

function needsKey(error: unknown): boolean {
  return error instanceof ProblemError && (error.status === 401 || error.status === 403);
}

/** A refused key is told apart from a missing one: the person typed something, and it was not it. */
function keySentence(): string {
  return keyInput.value.trim() ? 'The API key was not accepted; check it and try again.' : 'This server asks for an API key: enter it below the link.';
}

/** Why the last create failed, shown under the form; an error about the key goes once a key works. */
let formErrorIsKey = false;

function showFormError(sentence: string, aboutKey = false): void {
  formErrorIsKey = aboutKey;
  formError.textContent = sentence;
  formError.hidden = false;
}

/** The first page again (after a key was given), or the next one. */
async function loadPage(next: boolean): Promise<void> {
  try {
    const page = await client().list({ limit: PAGE_SIZE, ...(next && cursor ? { cursor } : {}) });
    if (!next) clearList();
    const shown = page.items.map((download) => show(download, 'bottom')).filter((card) => card !== undefined);
    cursor = page.next_cursor;
    // The button goes once there is no more; a person who pressed it goes on from the first new card.
    if (cursor === null && document.activeElement === more && shown[0]) {
      shown[0].node.tabIndex = -1;
      shown[0].node.focus();
    }
    more.hidden = cursor === null;
    listNote.textContent = cards.size ? '' : 'No downloads yet.';
    if (formErrorIsKey) formError.hidden = true;
  } catch (error) {
    if (needsKey(error)) {
      keyRow.hidden = false;
      // What the list showed belongs to a key that no longer works.
      clearList();
      more.hidden = true;
    }
    listNote.textContent = needsKey(error) ? keySentence() : sentenceOf(error);
  }
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void (async () => {
    formError.hidden = true;
    // The service says which tags it takes (a 400 names the field); the page only splits the list.
    if (!urlInput.value.trim()) {
      showFormError('Paste the link of a video first.');
      urlInput.focus();
      return;
    }
    submit.disabled = true;
    const chosen = quality.value;
    const body: CreateDownload = {
      url: urlInput.value.trim(),
      quality: chosen === 'best' || chosen === 'worst' ? chosen : Number(chosen),
      ...(filename.value.trim() ? { filename: filename.value.trim() } : {}),
      ...(mode.value === 'video' ? {} : { mode: mode.value as CreateDownload['mode'] }),
      ...(languagesOf(subtitles.value).length ? { subtitles: languagesOf(subtitles.value) } : {}),
    };
    try {
      const download = await client().create(body);
      urlInput.value = '';
      filename.value = '';
      listNote.textContent = '';
      show(download, 'top');
      if (cards.size === 1) void loadPage(false);
    } catch (error) {
      if (needsKey(error)) keyRow.hidden = false;
      showFormError(needsKey(error) ? keySentence() : sentenceOf(error), needsKey(error));
      (needsKey(error) ? keyInput : urlInput).focus();
    } finally {
      submit.disabled = false;
    }
  })();
});

// The key is kept as it is typed, so that it outlives a reload; emptying the field forgets it.
keyInput.addEventListener('change', () => {
  storeKey(keyInput.value.trim());
  void loadPage(false);
});
more.addEventListener('click', () => void loadPage(true));
void loadPage(false);
