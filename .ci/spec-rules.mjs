// The breaking changes Optic does not see, for the spec diff gate (.ci/spec-diff.mjs). Optic
// compares operations, parameters, bodies, types, required fields and enums under `paths`; it skips
// the `webhooks` section entirely, and never looks at limits, response headers, media types or
// security. breakingChanges() walks two parsed OpenAPI 3.1 documents (the release and the edit) and
// reports each of those as { at, message, where }: `at` the JSON pointer of the changed thing (in the
// edited document, or in the release when it was removed), `where` the operations it reaches; and,
// with `review: true`, a change it cannot judge (a changed pattern), for a person to look at.
//
// Which way a change breaks depends on who writes the data:
// - What a client sends (request bodies, parameters; and a webhook receiver's answers) breaks when
//   it accepts less: a lower maxLength/maximum/maxItems, a higher minLength/minimum/minItems, a new
//   pattern or enum, a removed enum value, a removed media type.
// - What a client reads (response bodies and headers; and a webhook's payload and headers, which
//   the service sends) breaks when it may hold more: a higher or dropped upper limit, a lower or
//   dropped lower one, a dropped pattern, a removed field or header, a field no longer required, a
//   new type, and a new enum value. A new value breaks clients generated with a closed union and an
//   exhaustive switch over it; a field that is meant to grow should have no enum.
// - Security breaks when a way a client was let in no longer is: an operation that needed no key now
//   needs one, another scheme replaces one, or a scheme's type, name or place changes.
// Removed fields, new required fields, type changes and removed operations or status codes are
// checked here only in `webhooks`; under `paths` Optic reports them.
// $refs are resolved within the document (#/...); a $ref to another file is not followed.

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const UPPER = ['maxLength', 'maximum', 'exclusiveMaximum', 'maxItems', 'maxProperties'];
const LOWER = ['minLength', 'minimum', 'exclusiveMinimum', 'minItems', 'minProperties'];

const escape = (key) => String(key).replaceAll('~', '~0').replaceAll('/', '~1');
const pointer = (base, ...keys) => base + keys.map((key) => '/' + escape(key)).join('');
const isObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);
const show = (value) => JSON.stringify(value);

/** A node of one document and where it is: `ptr` is its own place, after any $ref it came through. */
function at(doc, node, ptr) {
  const seen = new Set();
  while (isObject(node) && typeof node.$ref === 'string' && node.$ref.startsWith('#') && !seen.has(node.$ref)) {
    seen.add(node.$ref);
    ptr = node.$ref.slice(1);
    node = ptr
      .split('/')
      .slice(1)
      .map((key) => decodeURIComponent(key).replaceAll('~1', '/').replaceAll('~0', '~'))
      .reduce(step, doc);
  }
  return { doc, node, ptr };
}
const step = (value, key) => (isObject(value) || Array.isArray(value) ? value[key] : undefined);
const child = (side, ...keys) => at(side.doc, keys.reduce(step, side.node), pointer(side.ptr, ...keys));

/** The JSON types a schema allows, with integer inside number; undefined when it allows any. */
function typesOf(schema) {
  if (!isObject(schema)) return undefined;
  return schema.type === undefined ? undefined : new Set([schema.type].flat());
}
const allows = (types, type) => types === undefined || types.has(type) || (type === 'integer' && types.has('number'));
const valuesOf = (schema) => (!isObject(schema) ? undefined : Array.isArray(schema.enum) ? schema.enum : 'const' in schema ? [schema.const] : undefined);
const same = (a, b) => show(a) === show(b);

export function breakingChanges(before, after) {
  const found = [];
  const report = (side, message, where) => found.push({ at: side.ptr, message, where });
  const review = (side, message, where) => found.push({ at: side.ptr, message, where, review: true });
  const visited = new Set();

  /**
   * Compares two schemas as `how` says: `reads` is true where clients read the data (false where
   * they write it), `role` names that place in messages, `structural` asks for the checks Optic makes
   * under `paths` (removed fields, new required ones, types), and `events` marks a webhook payload
   * and its own fields (not the data nested in them): a value of theirs that is no longer sent, such
   * as an event `type`, is an event receivers wait for in vain. It counts the levels left.
   */
  function schema(was, is, how) {
    if (!isObject(was.node) || !isObject(is.node)) return;
    const key = `${was.ptr} ${is.ptr} ${how.reads} ${how.where}`;
    if (visited.has(key)) return; // a recursive schema
    visited.add(key);
    const [a, b] = [was.node, is.node];
    const { reads, role, where } = how;
    const broke = (word, message) => report(b[word] === undefined ? child(was, word) : child(is, word), `${role} ${message}`, where);

    // Limits: what clients write may be refused no more often, what they read may hold no more.
    for (const word of [...UPPER, ...LOWER]) {
      if (a[word] === b[word]) continue;
      const upper = UPPER.includes(word);
      const narrower = b[word] !== undefined && (a[word] === undefined || (upper ? b[word] < a[word] : b[word] > a[word]));
      if (reads !== narrower) broke(word, `limit ${reads ? 'widened' : 'narrowed'}: ${word} ${a[word] ?? 'none'} -> ${b[word] ?? 'none'}`);
    }
    // A new pattern accepts less, a dropped one allows more; whether one regex accepts less than
    // another cannot be told here, so a changed one is left for review by hand.
    if (a.pattern !== b.pattern) {
      const change = `${show(a.pattern ?? null)} -> ${show(b.pattern ?? null)}`;
      if (a.pattern !== undefined && b.pattern !== undefined) review(is, `${role} pattern changed: ${change}`, where);
      else if (reads === (b.pattern === undefined)) broke('pattern', `pattern ${reads ? 'dropped' : 'added'}: ${change}`);
    }

    // Enums (and const): what clients write may lose no value, what they read may gain none.
    const [was_, is_] = [valuesOf(a), valuesOf(b)];
    const word = 'enum' in b || 'enum' in a ? 'enum' : 'const';
    if (!reads && !was_ && is_) broke(word, `values restricted to ${show(is_)}`);
    if (reads && was_ && !is_) broke(word, `values no longer restricted to ${show(was_)}`);
    if (was_ && is_) {
      const lost = was_.filter((value) => !is_.some((other) => same(value, other)));
      const gained = is_.filter((value) => !was_.some((other) => same(value, other)));
      const values = (list) => `value${list.length > 1 ? 's' : ''} ${list.map(show).join(', ')}`;
      if (!reads && lost.length) broke(word, `enum ${values(lost)} removed`);
      if (reads && gained.length) broke(word, `enum ${values(gained)} added`);
      if (how.events && lost.length) broke(word, `enum ${values(lost)} removed: receivers waiting for it are no longer sent it`);
    }

    if (how.structural) {
      const [typesWas, typesIs] = [typesOf(a), typesOf(b)];
      const gained = (from, to) => (to === undefined ? from !== undefined : [...to].some((type) => !allows(from, type)));
      const names = (types) => (types ? [...types].join('|') : 'any');
      if (reads ? gained(typesWas, typesIs) : gained(typesIs, typesWas)) broke('type', `type changed: ${names(typesWas)} -> ${names(typesIs)}`);
      const required = [new Set(a.required ?? []), new Set(b.required ?? [])];
      for (const name of Object.keys(a.properties ?? {})) {
        if (!isObject(b.properties) || !(name in b.properties)) {
          // A client that writes a removed field is refused only where no other field is allowed.
          if (reads || b.additionalProperties === false) report(child(was, 'properties', name), `${role} field removed: ${name}`, where);
        } else if (reads && required[0].has(name) && !required[1].has(name))
          report(child(is, 'properties', name), `${role} field no longer required: ${name}`, where);
      }
      if (!reads)
        for (const name of required[1]) if (!required[0].has(name)) report(child(is, 'properties', name), `${role} field newly required: ${name}`, where);
    }

    // Into the parts both versions have.
    const inner = { ...how, events: how.events && how.events - 1 };
    for (const name of Object.keys(a.properties ?? {}))
      if (isObject(b.properties) && name in b.properties) schema(child(was, 'properties', name), child(is, 'properties', name), inner);
    for (const word of ['items', 'additionalProperties', 'contains', 'not'])
      if (isObject(a[word]) && isObject(b[word])) schema(child(was, word), child(is, word), inner);
    for (const word of ['oneOf', 'anyOf', 'allOf', 'prefixItems'])
      if (Array.isArray(a[word]) && Array.isArray(b[word]))
        for (let i = 0; i < Math.min(a[word].length, b[word].length); i++) schema(child(was, word, i), child(is, word, i), inner);
  }

  /** Compares a request body or a response: each media type the release had must remain. */
  function content(was, is, how) {
    for (const type of Object.keys(was.node?.content ?? {})) {
      if (!isObject(is.node?.content) || !(type in is.node.content)) report(child(was, 'content', type), `${how.role} media type removed: ${type}`, how.where);
      else schema(child(was, 'content', type, 'schema'), child(is, 'content', type, 'schema'), { ...how, where: `${how.where} (${type})` });
    }
  }

  /** Compares headers a client reads (a response's, or the ones the service sends with a webhook). */
  function headers(was, is, where, role) {
    for (const [name, header] of Object.entries(was)) {
      const other = Object.entries(is).find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1];
      if (!other) report(header, `${role} header removed: ${name}`, where);
      else {
        if (header.node?.required === true && other.node?.required !== true) report(other, `${role} header no longer required: ${name}`, where);
        schema(child(header, 'schema'), child(other, 'schema'), { reads: true, role: `${role} header`, where: `${where} header ${name}`, structural: true });
      }
    }
  }

  /** The parameters of an operation with its path's, resolved, keyed by where they go and their name. */
  function parameters(pathItem, operation) {
    const all = new Map();
    for (const side of [pathItem, operation])
      (side.node?.parameters ?? []).forEach((_, i) => {
        const parameter = child(side, 'parameters', i);
        const name = parameter.node?.in === 'header' ? String(parameter.node?.name).toLowerCase() : parameter.node?.name;
        all.set(`${parameter.node?.in} ${name}`, parameter);
      });
    return all;
  }

  /**
   * Compares one operation. For a webhook, the service is the client: what it sends (the request)
   * is read by the receivers, and what they answer (the responses) is written by them.
   */
  function operation(pathWas, pathIs, was, is, where, webhook) {
    const [paramsWas, paramsIs] = [parameters(pathWas, was), parameters(pathIs, is)];
    if (webhook) {
      const sent = (params) => Object.fromEntries([...params].map(([key, parameter]) => [key.replace(/^header /, ''), parameter]));
      headers(sent(paramsWas), sent(paramsIs), where, 'webhook');
    } else
      for (const [key, parameter] of paramsWas) {
        const other = paramsIs.get(key);
        if (other)
          schema(child(parameter, 'schema'), child(other, 'schema'), {
            reads: false,
            role: 'request parameter',
            where: `${where} parameter ${parameter.node?.name}`,
          });
      }

    const [bodyWas, bodyIs] = [child(was, 'requestBody'), child(is, 'requestBody')];
    if (isObject(bodyWas.node) && isObject(bodyIs.node)) {
      if (!webhook && bodyIs.node.required === true && bodyWas.node.required !== true) report(bodyIs, 'request body newly required', where);
      const how = webhook ? { reads: true, role: 'webhook payload', structural: true, events: 2 } : { reads: false, role: 'request' };
      content(bodyWas, bodyIs, { ...how, where: `${where} request body` });
    } else if (webhook && isObject(bodyWas.node)) report(bodyWas, 'webhook payload removed', where);

    for (const status of Object.keys(was.node?.responses ?? {})) {
      const [responseWas, responseIs] = [child(was, 'responses', status), child(is, 'responses', status)];
      if (!isObject(responseIs.node)) {
        if (webhook) report(responseWas, `webhook response status removed: ${status}`, where);
        continue;
      }
      const named = (response) => Object.fromEntries(Object.keys(response.node?.headers ?? {}).map((name) => [name, child(response, 'headers', name)]));
      if (!webhook) headers(named(responseWas), named(responseIs), `${where} response ${status}`, 'response');
      const how = webhook ? { reads: false, role: 'webhook response', structural: true } : { reads: true, role: 'response' };
      content(responseWas, responseIs, { ...how, where: `${where} response ${status}` });
    }
  }

  // Security: every alternative a client could satisfy before must still be enough. An alternative
  // is enough when some alternative of the new list asks for no scheme (or scope) beyond it.
  const requirements = (list) => (Array.isArray(list) && list.length ? list : [{}]);
  const covers = (given, needed) =>
    Object.entries(needed).every(([scheme, scopes]) => scheme in given && scopes.every((scope) => given[scheme].includes(scope)));
  const describe = (requirement) => (Object.keys(requirement).length ? Object.keys(requirement).join(' + ') : 'no credentials');
  function security(was, is, where) {
    for (const requirement of requirements(was.node))
      if (!requirements(is.node).some((needed) => covers(requirement, needed)))
        report(is.node === undefined ? was : is, `security changed: a client with ${describe(requirement)} is no longer let in`, where);
  }

  const doc = [at(before, before, ''), at(after, after, '')];
  const global = [child(doc[0], 'security'), child(doc[1], 'security')];
  security(global[0], global[1], 'every operation without its own security');

  const normal = (template) => template.replace(/\{[^}]*\}/g, '{}');
  for (const section of ['paths', 'webhooks']) {
    const webhook = section === 'webhooks';
    const index = new Map(Object.keys(after[section] ?? {}).map((key) => [webhook ? key : normal(key), key]));
    for (const key of Object.keys(before[section] ?? {})) {
      const pathWas = child(doc[0], section, key);
      const keyIs = index.get(webhook ? key : normal(key));
      if (keyIs === undefined) {
        if (webhook) report(pathWas, `webhook removed: ${key}`, `webhook ${key}`);
        continue;
      }
      const pathIs = child(doc[1], section, keyIs);
      for (const method of METHODS) {
        if (!isObject(pathWas.node?.[method])) continue;
        const where = webhook ? `webhook ${key} (${method.toUpperCase()})` : `${method.toUpperCase()} ${keyIs}`;
        const [was, is] = [child(pathWas, method), child(pathIs, method)];
        if (!isObject(is.node)) {
          if (webhook) report(was, 'webhook operation removed', where);
          continue;
        }
        operation(pathWas, pathIs, was, is, where, webhook);
        // Operations that follow the global security both times are covered by its check above.
        if (!webhook && (was.node.security !== undefined || is.node.security !== undefined)) {
          const effective = (operation, global) => (operation.node.security !== undefined ? child(operation, 'security') : global);
          security(effective(was, global[0]), effective(is, global[1]), where);
        }
      }
    }
  }

  // The schemes themselves: one a client uses must keep its type and where the credential goes.
  const schemes = [child(doc[0], 'components', 'securitySchemes'), child(doc[1], 'components', 'securitySchemes')];
  for (const name of Object.keys(schemes[0].node ?? {})) {
    const [was, is] = [child(schemes[0], name), child(schemes[1], name)];
    if (!isObject(is.node)) {
      report(was, `security scheme removed: ${name}`, 'security');
      continue;
    }
    for (const word of ['type', 'scheme', 'name', 'in', 'openIdConnectUrl']) {
      const folded = (value) => (word === 'scheme' && typeof value === 'string' ? value.toLowerCase() : value);
      if (folded(was.node[word]) !== folded(is.node[word]))
        report(child(is, word), `security scheme ${name}: ${word} changed: ${show(was.node[word] ?? null)} -> ${show(is.node[word] ?? null)}`, 'security');
    }
    for (const flow of Object.keys(was.node.flows ?? {})) {
      if (!isObject(is.node.flows?.[flow])) report(child(was, 'flows', flow), `security scheme ${name}: flow removed: ${flow}`, 'security');
      else
        for (const word of ['authorizationUrl', 'tokenUrl'])
          if (was.node.flows[flow][word] !== is.node.flows[flow][word])
            report(child(is, 'flows', flow, word), `security scheme ${name}: ${flow} ${word} changed`, 'security');
    }
  }
  return found;
}

/** One line per change, with the places it reaches (a shared schema reaches several). */
export function describeChanges(found) {
  const lines = new Map();
  for (const { at, message, where } of found) {
    const line = `${at || '/'}: ${message}`;
    if (!lines.has(line)) lines.set(line, []);
    if (!lines.get(line).includes(where)) lines.get(line).push(where);
  }
  return [...lines].map(([line, wheres]) => `${line} (${wheres.slice(0, 3).join('; ')}${wheres.length > 3 ? `; and ${wheres.length - 3} more` : ''})`);
}
