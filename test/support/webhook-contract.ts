import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { createSpecChecker } from './openapi.ts';
import type { ReceivedWebhook } from './webhook-receiver.ts';

// Holds a delivery to one of openapi.yaml's `webhooks` (downloadEnded, collectionEnded): its
// header parameters and its body, by turning that request into a response the spec checker
// already knows how to judge.

type Parameter = { name: string; in: string; required?: boolean; schema?: unknown };
type WebhookSpec = { post: { parameters: Parameter[]; requestBody: { content: object } } };

const spec = parseYaml(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as Record<string, unknown> & {
  webhooks: Record<string, WebhookSpec>;
};

export function webhookChecker(name: string): (delivery: ReceivedWebhook) => void {
  const post = spec.webhooks[name]!.post;
  const headers = Object.fromEntries(
    post.parameters
      .filter((parameter) => parameter.in === 'header')
      .map((parameter) => [parameter.name, { required: parameter.required, schema: parameter.schema }]),
  );
  const check = createSpecChecker({
    ...spec,
    paths: { '/callback': { post: { responses: { '200': { description: 'A webhook delivery.', headers, content: post.requestBody.content } } } } },
  });
  return (delivery) =>
    check({ method: 'POST', pathTemplate: '/callback', status: 200, headers: delivery.headers, body: delivery.body, hasBody: delivery.body.length > 0 });
}
