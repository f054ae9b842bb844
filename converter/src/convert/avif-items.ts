/**
 * Reads back what the AVIF encoder wrote for one tile of a grid (avif-grid.ts): its colour item's AV1 payload
 * and properties, and those of its alpha auxiliary item, so the grid's container can carry them. The input is
 * always this encoder's own output (libavif's writer: ftyp, meta, mdat), so anything else is our failure,
 * thrown as an Error; the parse still checks every length against the bytes it has.
 */

/** An item property as the encoder wrote it: the whole box, and whether the item marked it essential. */
export type ItemProperty = { box: Uint8Array; essential: boolean };

/** A coded (av01) image item: its AV1 payload and its properties but `ispe` (the grid writes its own). */
export type CodedItem = { payload: Uint8Array; properties: ItemProperty[] };

/** One encoded tile: the file's `ftyp` box, its colour item and its alpha item (null when opaque). */
export type EncodedTile = { fileType: Uint8Array; colour: CodedItem; alpha: CodedItem | null };

type Box = { type: string; start: number; body: number; end: number };

/** What the meta box says of its items, as far as a grid needs it. */
type Meta = {
  primary: number;
  locations: Map<number, { offset: number; length: number }>;
  /** Item → the item its `auxl` reference points at. */
  auxiliaryOf: Map<number, number>;
  properties: Uint8Array[];
  associations: Map<number, { index: number; essential: boolean }[]>;
};

class Cursor {
  private readonly view: DataView;
  constructor(
    readonly bytes: Uint8Array,
    public at: number,
    private readonly end: number,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  private take(size: number): number {
    if (this.at + size > this.end) throw new Error("the encoder's AVIF ends inside a box");
    const at = this.at;
    this.at += size;
    return at;
  }
  u8(): number {
    return this.view.getUint8(this.take(1));
  }
  u16(): number {
    return this.view.getUint16(this.take(2));
  }
  u32(): number {
    return this.view.getUint32(this.take(4));
  }
  /** An unsigned field of `size` bytes (0, 4 or 8, as iloc sizes them). */
  sized(size: number): number {
    if (size === 0) return 0;
    if (size === 4) return this.u32();
    if (size === 8) return this.u32() * 2 ** 32 + this.u32();
    throw new Error(`the encoder's AVIF has an iloc field of ${size} bytes`);
  }
  fourCc(): string {
    const at = this.take(4);
    return String.fromCharCode(...this.bytes.subarray(at, at + 4));
  }
}

/** The boxes from `start` to `end`, each with where its body starts. */
function boxesIn(bytes: Uint8Array, start: number, end: number): Box[] {
  const boxes: Box[] = [];
  const cursor = new Cursor(bytes, start, end);
  while (cursor.at < end) {
    const at = cursor.at;
    const size = cursor.u32();
    const type = cursor.fourCc();
    const boxEnd = size === 0 ? end : at + size;
    if (size !== 0 && size < 8) throw new Error(`the encoder's AVIF has a ${type} box of ${size} bytes`);
    if (boxEnd > end) throw new Error(`the encoder's AVIF ends inside its ${type} box`);
    boxes.push({ type, start: at, body: at + 8, end: boxEnd });
    cursor.at = boxEnd;
  }
  return boxes;
}

function only(boxes: Box[], type: string): Box {
  const found = boxes.find((box) => box.type === type);
  if (!found) throw new Error(`the encoder's AVIF has no ${type} box`);
  return found;
}

/** A full box's version (its flags are not needed here) and a cursor after them. */
function fullBox(bytes: Uint8Array, box: Box): { version: number; flags: number; cursor: Cursor } {
  const cursor = new Cursor(bytes, box.body, box.end);
  const word = cursor.u32();
  return { version: word >>> 24, flags: word & 0xffffff, cursor };
}

/** iloc: each item's single run of bytes in the file (construction method 0, as libavif writes). */
function readLocations(bytes: Uint8Array, box: Box): Meta["locations"] {
  const { version, cursor } = fullBox(bytes, box);
  const sizes = cursor.u16();
  const [offsetSize, lengthSize, baseSize, indexSize] = [sizes >> 12, (sizes >> 8) & 15, (sizes >> 4) & 15, sizes & 15];
  const count = version < 2 ? cursor.u16() : cursor.u32();
  const locations: Meta["locations"] = new Map();
  for (let i = 0; i < count; i += 1) {
    const id = version < 2 ? cursor.u16() : cursor.u32();
    if (version > 0 && (cursor.u16() & 15) !== 0) throw new Error("the encoder's AVIF keeps an item outside mdat");
    cursor.u16(); // data_reference_index: 0, this file
    const base = cursor.sized(baseSize);
    const extents = cursor.u16();
    if (extents !== 1) throw new Error(`the encoder's AVIF splits item ${id} into ${extents} extents`);
    if (version > 0) cursor.sized(indexSize);
    const offset = base + cursor.sized(offsetSize);
    locations.set(id, { offset, length: cursor.sized(lengthSize) });
  }
  return locations;
}

/** iref: the `auxl` references (an alpha item → its colour item). */
function readAuxiliaries(bytes: Uint8Array, box: Box | undefined): Meta["auxiliaryOf"] {
  const auxiliaryOf: Meta["auxiliaryOf"] = new Map();
  if (!box) return auxiliaryOf;
  const { version } = fullBox(bytes, box);
  for (const reference of boxesIn(bytes, box.body + 4, box.end)) {
    const cursor = new Cursor(bytes, reference.body, reference.end);
    const id = () => (version === 0 ? cursor.u16() : cursor.u32());
    const from = id();
    const count = cursor.u16();
    if (reference.type === "auxl" && count >= 1) auxiliaryOf.set(from, id());
  }
  return auxiliaryOf;
}

/** ipma: each item's properties, as 1-based indices into ipco with their essential flag. */
function readAssociations(bytes: Uint8Array, box: Box): Meta["associations"] {
  const { version, flags, cursor } = fullBox(bytes, box);
  const associations: Meta["associations"] = new Map();
  const count = cursor.u32();
  for (let i = 0; i < count; i += 1) {
    const id = version < 1 ? cursor.u16() : cursor.u32();
    const list: { index: number; essential: boolean }[] = [];
    for (let n = cursor.u8(); n > 0; n -= 1) {
      const value = flags & 1 ? cursor.u16() : cursor.u8();
      const bits = flags & 1 ? 15 : 7;
      list.push({ index: value & ((1 << bits) - 1), essential: value >> bits === 1 });
    }
    associations.set(id, list);
  }
  return associations;
}

function readMeta(bytes: Uint8Array, meta: Box): Meta {
  const children = boxesIn(bytes, meta.body + 4, meta.end);
  const primary = fullBox(bytes, only(children, "pitm"));
  const iprp = boxesIn(bytes, only(children, "iprp").body, only(children, "iprp").end);
  const ipco = only(iprp, "ipco");
  return {
    primary: primary.version === 0 ? primary.cursor.u16() : primary.cursor.u32(),
    locations: readLocations(bytes, only(children, "iloc")),
    auxiliaryOf: readAuxiliaries(
      bytes,
      children.find((box) => box.type === "iref"),
    ),
    properties: boxesIn(bytes, ipco.body, ipco.end).map((box) => bytes.subarray(box.start, box.end)),
    associations: readAssociations(bytes, only(iprp, "ipma")),
  };
}

/** An item's payload and its properties but `ispe`. */
function codedItem(bytes: Uint8Array, meta: Meta, id: number): CodedItem {
  const location = meta.locations.get(id);
  if (!location || location.offset + location.length > bytes.length)
    throw new Error(`the encoder's AVIF has no payload for item ${id}`);
  const properties: ItemProperty[] = [];
  for (const { index, essential } of meta.associations.get(id) ?? []) {
    const box = meta.properties[index - 1];
    if (!box) throw new Error(`the encoder's AVIF names property ${index}, which it does not have`);
    if (propertyType(box) !== "ispe") properties.push({ box, essential });
  }
  return { payload: bytes.subarray(location.offset, location.offset + location.length), properties };
}

/** A property box's type. */
export function propertyType(box: Uint8Array): string {
  return String.fromCharCode(...box.subarray(4, 8));
}

/** The colour item (the primary one) and alpha item (its `auxl`) of an AVIF the encoder wrote. */
export function readEncodedAvif(bytes: Uint8Array): EncodedTile {
  const top = boxesIn(bytes, 0, bytes.length);
  const fileType = only(top, "ftyp");
  const meta = readMeta(bytes, only(top, "meta"));
  const alphaId = [...meta.auxiliaryOf].find(([, to]) => to === meta.primary)?.[0];
  return {
    fileType: bytes.subarray(fileType.start, fileType.end),
    colour: codedItem(bytes, meta, meta.primary),
    alpha: alphaId === undefined ? null : codedItem(bytes, meta, alphaId),
  };
}
