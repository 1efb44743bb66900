// Language tags as sources give them (BCP 47: `en`, `en-US`, `pt-BR`, `zh-Hans`, `yue`, and, from
// sloppy sources, `en_US` or a three-letter code) turned into the three-letter ISO 639-2 code that
// a media file holds. MP4 (ISO/IEC 14496-12, `mdhd`) wants the terminological form (`deu`,
// `fra`, `zho`); Matroska's Language element wants the bibliographic one (`ger`, `fre`, `chi`).
// The two differ for the 20 languages of `BIBLIOGRAPHIC` only.

/** ISO 639-1 (two letters) to ISO 639-2/T, for every ISO 639-1 code, and the codes BCP 47 deprecated for others (iw, in, ji, jw, mo). */
const FROM_TWO_LETTERS = new Map(
  (
    'aa:aar ab:abk ae:ave af:afr ak:aka am:amh an:arg ar:ara as:asm av:ava ay:aym az:aze ' +
    'ba:bak be:bel bg:bul bh:bih bi:bis bm:bam bn:ben bo:bod br:bre bs:bos ' +
    'ca:cat ce:che ch:cha co:cos cr:cre cs:ces cu:chu cv:chv cy:cym ' +
    'da:dan de:deu dv:div dz:dzo ' +
    'ee:ewe el:ell en:eng eo:epo es:spa et:est eu:eus ' +
    'fa:fas ff:ful fi:fin fj:fij fo:fao fr:fra fy:fry ' +
    'ga:gle gd:gla gl:glg gn:grn gu:guj gv:glv ' +
    'ha:hau he:heb hi:hin ho:hmo hr:hrv ht:hat hu:hun hy:hye hz:her ' +
    'ia:ina id:ind ie:ile ig:ibo ii:iii ik:ipk io:ido is:isl it:ita iu:iku ' +
    'ja:jpn jv:jav ' +
    'ka:kat kg:kon ki:kik kj:kua kk:kaz kl:kal km:khm kn:kan ko:kor kr:kau ks:kas ku:kur kv:kom kw:cor ky:kir ' +
    'la:lat lb:ltz lg:lug li:lim ln:lin lo:lao lt:lit lu:lub lv:lav ' +
    'mg:mlg mh:mah mi:mri mk:mkd ml:mal mn:mon mr:mar ms:msa mt:mlt my:mya ' +
    'na:nau nb:nob nd:nde ne:nep ng:ndo nl:nld nn:nno no:nor nr:nbl nv:nav ny:nya ' +
    'oc:oci oj:oji om:orm or:ori os:oss ' +
    'pa:pan pi:pli pl:pol ps:pus pt:por ' +
    'qu:que ' +
    'rm:roh rn:run ro:ron ru:rus rw:kin ' +
    'sa:san sc:srd sd:snd se:sme sg:sag si:sin sk:slk sl:slv sm:smo sn:sna so:som sq:sqi sr:srp ss:ssw st:sot su:sun sv:swe sw:swa ' +
    'ta:tam te:tel tg:tgk th:tha ti:tir tk:tuk tl:tgl tn:tsn to:ton tr:tur ts:tso tt:tat tw:twi ty:tah ' +
    'ug:uig uk:ukr ur:urd uz:uzb ' +
    've:ven vi:vie vo:vol ' +
    'wa:wln wo:wol xh:xho yi:yid yo:yor za:zha zh:zho zu:zul ' +
    'iw:heb in:ind ji:yid jw:jav mo:ron'
  )
    .split(' ')
    .map((pair) => pair.split(':') as [string, string]),
);

/** ISO 639-2/B to ISO 639-2/T, where they differ. */
const BIBLIOGRAPHIC = new Map(
  'alb:sqi arm:hye baq:eus bur:mya chi:zho cze:ces dut:nld fre:fra geo:kat ger:deu gre:ell ice:isl mac:mkd mao:mri may:msa per:fas rum:ron slo:slk tib:bod wel:cym'
    .split(' ')
    .map((pair) => pair.split(':') as [string, string]),
);
const TERMINOLOGICAL = new Map([...BIBLIOGRAPHIC].map(([b, t]) => [t, b]));

/** The code of a language none can be named for. */
export const UNDETERMINED = 'und';

/** A three-letter code in its terminological form (`ger` becomes `deu`); others as they are. */
export function terminological(code: string): string {
  return BIBLIOGRAPHIC.get(code) ?? code;
}

/**
 * The ISO 639-2 code of a BCP 47 language tag, in its terminological (`T`, for MP4) or
 * bibliographic (`B`, for Matroska) form: `en-US` gives `eng`, `pt-BR` `por`, `de` `deu` (`ger`
 * in B), `zh-Hans` `zho`, an extended language subtag its own code (`zh-yue` gives `yue`), and a
 * three-letter primary subtag (`fil`, `yue`, or a source's `eng`/`ger`) itself. Anything else (a
 * private-use or grandfathered tag, a language ISO 639-1 has no code for, junk) gives `und`.
 */
export function iso639_2(tag: string, form: 'T' | 'B' = 'T'): string {
  const subtags = tag.trim().toLowerCase().split(/[-_]/);
  const [primary = '', second = ''] = subtags;
  let code: string | undefined;
  if (/^[a-z]{2}$/.test(primary)) code = /^[a-z]{3}$/.test(second) ? second : FROM_TWO_LETTERS.get(primary);
  else if (/^[a-z]{3}$/.test(primary)) code = terminological(primary);
  if (!code) return UNDETERMINED;
  return form === 'B' ? (TERMINOLOGICAL.get(code) ?? code) : code;
}
