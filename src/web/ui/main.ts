import './style.css';
import {
  clipOfFields,
  ProblemError,
  type Collection,
  type CreateCollection,
  type CreateDownload,
  type Download,
  type VideoDownloadClient,
} from '../../client/index.ts';
import { CollectionCard } from './collection-card.ts';
import { DownloadCard, sentenceOf } from './download-card.ts';
import { LiveCards } from './live.ts';
import { clientFor, storedKey, storeKey } from './session.ts';
import { Subscriptions } from './subscriptions.ts';

// The page: a form that creates downloads (one link) or a collection (several links, or a link that
// holds several videos), the caller's subscriptions, and the recent collections and downloads,
// newest first, each live.

const PAGE_SIZE = 10;
/** Collections shown on top of the list: the newest; their entries are not listed again below. */
const COLLECTIONS_SHOWN = 10;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $<HTMLFormElement>('create');
const urlInput = $<HTMLTextAreaElement>('url');
const quality = $<HTMLSelectElement>('quality');
const mode = $<HTMLSelectElement>('mode');
const subtitles = $<HTMLInputElement>('subtitles');
const filename = $<HTMLInputElement>('filename');
const clipStart = $<HTMLInputElement>('clip-start');
const clipEnd = $<HTMLInputElement>('clip-end');
const keyRow = $<HTMLDivElement>('key-row');
const keyInput = $<HTMLInputElement>('api-key');
const submit = $<HTMLButtonElement>('submit');
const formError = $<HTMLParagraphElement>('form-error');
const list = $<HTMLUListElement>('downloads');
const collectionList = $<HTMLUListElement>('collections');
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
const collectionCards = new Map<string, CollectionCard>();
const live = new LiveCards(client);
let cursor: string | null = null;

const announce = (sentence: string) => (announcer.textContent = sentence);

function show(download: Download, where: 'top' | 'bottom'): DownloadCard | undefined {
  // An entry of a collection is shown in its collection's card.
  if (cards.has(download.id) || download.collection) return undefined;
  const card = new DownloadCard(download, client, announce);
  cards.set(download.id, card);
  if (where === 'top') list.prepend(card.node);
  else list.append(card.node);
  live.add(card, where === 'top');
  return card;
}

function showCollection(collection: Collection, where: 'top' | 'bottom'): void {
  if (collectionCards.has(collection.id)) return;
  const card = new CollectionCard(collection, client, announce);
  collectionCards.set(collection.id, card);
  if (where === 'top') collectionList.prepend(card.node);
  else collectionList.append(card.node);
}

function clearList(): void {
  live.clear();
  cards.clear();
  list.replaceChildren();
  for (const card of collectionCards.values()) card.stop();
  collectionCards.clear();
  collectionList.replaceChildren();
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
    const [page, collections] = await Promise.all([
      client().list({ limit: PAGE_SIZE, ...(next && cursor ? { cursor } : {}) }),
      next ? null : client().collections.list({ limit: COLLECTIONS_SHOWN }),
    ]);
    if (!next) clearList();
    for (const collection of collections?.items ?? []) showCollection(collection, 'bottom');
    const shown = page.items.map((download) => show(download, 'bottom')).filter((card) => card !== undefined);
    cursor = page.next_cursor;
    // The button goes once there is no more; a person who pressed it goes on from the first new card.
    if (cursor === null && document.activeElement === more && shown[0]) {
      shown[0].node.tabIndex = -1;
      shown[0].node.focus();
    }
    more.hidden = cursor === null;
    listNote.textContent = cards.size || collectionCards.size ? '' : 'No downloads yet.';
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

/** The links in the box: one a line (or apart by spaces), each once. */
function linksOf(text: string): string[] {
  return [...new Set(text.split(/\s+/).filter(Boolean))];
}

type Template = Pick<CreateDownload, 'quality' | 'mode' | 'subtitles' | 'clip'>;

/**
 * Several links are a batch. One link is first previewed (the service reads it and creates
 * nothing): when it holds several videos it becomes a collection; otherwise, or when the service
 * finds no list there (422) or has no collections (404), one download, as before, which then says
 * what is wrong with the link itself.
 */
async function create(vds: VideoDownloadClient, links: string[], template: Template, named: { filename?: string }): Promise<Download | Collection> {
  const [url] = links as [string, ...string[]];
  if (links.length > 1) return vds.collections.create({ urls: links, ...template } satisfies CreateCollection);
  const preview = await vds.collections.preview({ url }).catch((error: unknown) => {
    if (error instanceof ProblemError && (error.status === 404 || error.status === 422)) return null;
    throw error;
  });
  if (preview && (preview.entries.length > 1 || preview.truncated)) return vds.collections.create({ url, ...template });
  return vds.create({ url, ...template, ...named });
}

const subscriptions = new Subscriptions(
  {
    form: $('subscribe'),
    url: $('subscribe-url'),
    every: $('subscribe-every'),
    mode: $('subscribe-mode'),
    submit: $('subscribe-submit'),
    error: $('subscribe-error'),
    note: $('subscriptions-note'),
    list: $('subscriptions'),
  },
  client,
  {
    announce,
    // What a check found is shown with the other collections, on top.
    found: (collection) => {
      showCollection(collection, 'top');
      listNote.textContent = '';
    },
    keyProblem: (error) => {
      if (!needsKey(error)) return null;
      keyRow.hidden = false;
      return keySentence();
    },
  },
);

// Enter sends the form, as in a one-line box; Shift+Enter starts another line for another link.
urlInput.addEventListener('keydown', (event) => {
  if (event.key !== 'Enter' || event.shiftKey || event.isComposing) return;
  event.preventDefault();
  form.requestSubmit();
});

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void (async () => {
    formError.hidden = true;
    // The service says which tags it takes (a 400 names the field); the page only splits the list.
    if (!linksOf(urlInput.value).length) {
      showFormError('Paste the link of a video first.');
      urlInput.focus();
      return;
    }
    // A time the service would refuse anyway is told here, naming the field, before anything is sent.
    const clip = clipOfFields(clipStart.value, clipEnd.value);
    if ('problem' in clip) {
      showFormError(clip.problem);
      ('problem' in clipOfFields(clipStart.value, '') ? clipStart : clipEnd).focus();
      return;
    }
    submit.disabled = true;
    const chosen = quality.value;
    const template: Template = {
      quality: chosen === 'best' || chosen === 'worst' ? chosen : Number(chosen),
      ...(mode.value === 'video' ? {} : { mode: mode.value as CreateDownload['mode'] }),
      ...(languagesOf(subtitles.value).length ? { subtitles: languagesOf(subtitles.value) } : {}),
      ...(clip.clip ? { clip: clip.clip } : {}),
    };
    const named = filename.value.trim() ? { filename: filename.value.trim() } : {};
    try {
      const made = await create(client(), linksOf(urlInput.value), template, named);
      urlInput.value = '';
      filename.value = '';
      // A clip is a part of the video just sent; the next link is another video.
      clipStart.value = '';
      clipEnd.value = '';
      listNote.textContent = '';
      if ('counts' in made) showCollection(made, 'top');
      else show(made, 'top');
      if (cards.size + collectionCards.size === 1) void loadPage(false);
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
  void subscriptions.load();
});
more.addEventListener('click', () => void loadPage(true));
void loadPage(false);
void subscriptions.load();
