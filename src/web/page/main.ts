import './style.css';
import { ProblemError, type CreateDownload, type Download } from '../../client/index.ts';
import { DownloadCard, sentenceOf } from './download-card.ts';
import { clientFor, storedKey, storeKey } from './session.ts';

// The page: a form that creates downloads, and the recent downloads, newest first, each live.

const PAGE_SIZE = 10;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $<HTMLFormElement>('create');
const urlInput = $<HTMLInputElement>('url');
const quality = $<HTMLSelectElement>('quality');
const filename = $<HTMLInputElement>('filename');
const keyRow = $<HTMLDivElement>('key-row');
const keyInput = $<HTMLInputElement>('api-key');
const submit = $<HTMLButtonElement>('submit');
const formError = $<HTMLParagraphElement>('form-error');
const list = $<HTMLUListElement>('downloads');
const listNote = $<HTMLParagraphElement>('list-note');
const more = $<HTMLButtonElement>('more');

keyInput.value = storedKey();
if (keyInput.value) keyRow.hidden = false;
const client = () => clientFor(keyInput.value.trim());
const cards = new Map<string, DownloadCard>();
let cursor: string | null = null;

function show(download: Download, where: 'top' | 'bottom'): void {
  if (cards.has(download.id)) return;
  const card = new DownloadCard(download, client);
  cards.set(download.id, card);
  if (where === 'top') list.prepend(card.node);
  else list.append(card.node);
}

function needsKey(error: unknown): boolean {
  return error instanceof ProblemError && (error.status === 401 || error.status === 403);
}

/** The first page again (after a key was given), or the next one. */
async function loadPage(next: boolean): Promise<void> {
  try {
    const page = await client().list({ limit: PAGE_SIZE, ...(next && cursor ? { cursor } : {}) });
    if (!next) {
      for (const card of cards.values()) card.close();
      cards.clear();
      list.replaceChildren();
    }
    for (const download of page.items) show(download, 'bottom');
    cursor = page.next_cursor;
    more.hidden = cursor === null;
    listNote.textContent = cards.size ? '' : 'No downloads yet.';
  } catch (error) {
    if (needsKey(error)) keyRow.hidden = false;
    listNote.textContent = needsKey(error) ? 'Enter the API key to see the downloads.' : sentenceOf(error);
  }
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void (async () => {
    formError.hidden = true;
    submit.disabled = true;
    const chosen = quality.value;
    const body: CreateDownload = {
      url: urlInput.value.trim(),
      quality: chosen === 'best' || chosen === 'worst' ? chosen : Number(chosen),
      ...(filename.value.trim() ? { filename: filename.value.trim() } : {}),
    };
    try {
      const download = await client().create(body);
      storeKey(keyInput.value.trim());
      urlInput.value = '';
      filename.value = '';
      listNote.textContent = '';
      show(download, 'top');
      if (cards.size === 1) void loadPage(false);
    } catch (error) {
      if (needsKey(error)) keyRow.hidden = false;
      formError.textContent = sentenceOf(error);
      formError.hidden = false;
      (needsKey(error) ? keyInput : urlInput).focus();
    } finally {
      submit.disabled = false;
    }
  })();
});

keyInput.addEventListener('change', () => void loadPage(false));
more.addEventListener('click', () => void loadPage(true));
void loadPage(false);
