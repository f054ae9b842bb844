import { concatBytes } from "../../../src/lib/encoding";
import { type CodedItem, type EncodedTile, type ItemProperty, propertyType } from "./avif-items";

/**
 * The container of an AVIF too large for the encoder in one piece: an image grid (ISO/IEC 23008-12, 6.6.2.3;
 * MIAF, 7.3.11.4) whose tiles the encoder coded one at a time (avif.ts). Modelled on libavif's writer
 * (write.c): ftyp, then meta (hdlr, pitm → the colour grid, iloc, iinf, iref, iprp) and mdat.
 *
 * - The colour grid (item 1) is the primary item; its tiles are hidden av01 items, in row order in its `dimg`
 *   reference. With alpha, an alpha grid of the alpha tiles is an auxiliary image (`auxl`) of the colour grid.
 * - A tile item has `ispe` (the tile's size) and what the encoder gave it: `pixi`, `av1C` (essential), `colr`
 *   or `auxC`. A grid item has `ispe` (the image's size) and the same but `av1C`: it is not coded itself, and
 *   decoders take its configuration from its first tile.
 * - A grid's payload is its ImageGrid: rows, columns and the output size, which crops the tiles' padding.
 */

/** How a picture is cut: `columns × rows` tiles of `tileWidth × tileHeight`, cropped to `width × height`. */
export type GridLayout = {
  columns: number;
  rows: number;
  tileWidth: number;
  tileHeight: number;
  width: number;
  height: number;
};

/** An item of the file: its type, whether it is hidden, its payload and properties. */
type Item = { id: number; type: "grid" | "av01"; hidden: boolean; payload: Uint8Array; properties: ItemProperty[] };

const encoder = new TextEncoder();

function u8(value: number): Uint8Array {
  return Uint8Array.of(value);
}

function u16(value: number): Uint8Array {
  return Uint8Array.of(value >>> 8, value & 255);
}

function u32(value: number): Uint8Array {
  return Uint8Array.of(value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255);
}

function box(type: string, ...parts: Uint8Array[]): Uint8Array {
  const body = concatBytes(parts);
  return concatBytes([u32(body.length + 8), encoder.encode(type), body]);
}

function fullBox(type: string, version: number, flags: number, ...parts: Uint8Array[]): Uint8Array {
  return box(type, u32((version << 24) | flags), ...parts);
}

/** `ispe`: an item's width and height. */
function spatialExtent(width: number, height: number): ItemProperty {
  return { box: fullBox("ispe", 0, 0, u32(width), u32(height)), essential: false };
}

/** The ImageGrid payload of a grid item (16-bit output size: an image's edge is far below 65536). */
function imageGrid(layout: GridLayout): Uint8Array {
  return concatBytes([
    u8(0),
    u8(0),
    u8(layout.rows - 1),
    u8(layout.columns - 1),
    u16(layout.width),
    u16(layout.height),
  ]);
}

/** A grid item and its tiles' items, numbered from `firstId`: the grid takes what its first tile has but av1C. */
function gridItems(layout: GridLayout, tiles: CodedItem[], firstId: number): Item[] {
  const [first] = tiles;
  if (!first) throw new Error("a grid needs tiles");
  const gridProperties = first.properties.filter((property) => propertyType(property.box) !== "av1C");
  const grid: Item = {
    id: firstId,
    type: "grid",
    hidden: false,
    payload: imageGrid(layout),
    properties: [spatialExtent(layout.width, layout.height), ...gridProperties],
  };
  const tileExtent = spatialExtent(layout.tileWidth, layout.tileHeight);
  return [
    grid,
    ...tiles.map((tile, index): Item => {
      return {
        id: firstId + 1 + index,
        type: "av01",
        hidden: true,
        payload: tile.payload,
        properties: [tileExtent, ...tile.properties],
      };
    }),
  ];
}

/** MIAF 7.3.11.4.1: a grid's tiles share one decoder configuration; the encoder gives equal tiles equal av1C. */
function checkOneConfiguration(tiles: CodedItem[]): void {
  const configuration = (tile: CodedItem) =>
    tile.properties.find((property) => propertyType(property.box) === "av1C")?.box.join(",");
  const first = tiles[0] && configuration(tiles[0]);
  if (!first || tiles.some((tile) => configuration(tile) !== first))
    throw new Error("the AVIF encoder gave a grid's tiles different av1C");
}

/** `iinf`: each item's type and name; a tile is hidden (flags 1), shown only through its grid. */
function itemInfo(items: Item[], alphaGridId: number | null): Uint8Array {
  const entries = items.map((item) => {
    const name = item.id >= (alphaGridId ?? Number.POSITIVE_INFINITY) ? "Alpha" : "Color";
    return fullBox(
      "infe",
      2,
      item.hidden ? 1 : 0,
      u16(item.id),
      u16(0),
      encoder.encode(item.type),
      encoder.encode(`${name}\0`),
    );
  });
  return fullBox("iinf", 0, 0, u16(items.length), ...entries);
}

/** `iref`: each grid's tiles (`dimg`, in row order) and the alpha grid as the colour grid's auxiliary. */
function itemReferences(grids: Item[][], alphaGridId: number | null): Uint8Array {
  const references = grids.map(([grid, ...tiles]) =>
    box("dimg", u16(grid?.id ?? 0), u16(tiles.length), ...tiles.map((tile) => u16(tile.id))),
  );
  if (alphaGridId !== null) references.push(box("auxl", u16(alphaGridId), u16(1), u16(1)));
  return fullBox("iref", 0, 0, ...references);
}

/** `iprp`: the distinct property boxes (ipco) and each item's associations with them (ipma, 7-bit indices). */
function itemProperties(items: Item[]): Uint8Array {
  const distinct: Uint8Array[] = [];
  const indexOf = (property: Uint8Array) => {
    const key = property.join(",");
    let index = distinct.findIndex((known) => known.join(",") === key);
    if (index < 0) index = distinct.push(property) - 1;
    if (index >= 127) throw new Error("a grid has more item properties than ipma's 7-bit index holds");
    return index + 1;
  };
  const associations = items.map((item) => {
    const entries = item.properties.map(({ box, essential }) => u8((essential ? 0x80 : 0) | indexOf(box)));
    return concatBytes([u16(item.id), u8(entries.length), ...entries]);
  });
  return box("iprp", box("ipco", ...distinct), fullBox("ipma", 0, 0, u32(items.length), ...associations));
}

/** `iloc` (version 0, 32-bit offsets and lengths): each item's payload in mdat, which starts at `dataStart`. */
function itemLocations(items: Item[], dataStart: number): Uint8Array {
  let offset = dataStart;
  const entries = items.map((item) => {
    const entry = concatBytes([u16(item.id), u16(0), u16(1), u32(offset), u32(item.payload.length)]);
    offset += item.payload.length;
    return entry;
  });
  return fullBox("iloc", 0, 0, u16(0x4400), u16(items.length), ...entries);
}

/** The meta box, its iloc pointing at payloads laid out from `dataStart` on, in item order. */
function metaBox(items: Item[], grids: Item[][], alphaGridId: number | null, dataStart: number): Uint8Array {
  const handler = fullBox("hdlr", 0, 0, u32(0), encoder.encode("pict"), new Uint8Array(12), u8(0));
  return fullBox(
    "meta",
    0,
    0,
    handler,
    fullBox("pitm", 0, 0, u16(1)),
    itemLocations(items, dataStart),
    itemInfo(items, alphaGridId),
    itemReferences(grids, alphaGridId),
    itemProperties(items),
  );
}

/**
 * An AVIF of `layout.width × layout.height`: the grid of `tiles` (in row order, each the encoder's AVIF of one
 * tile, read by `readEncodedAvif`). With alpha, every tile must carry it: a grid's tiles are all alike.
 */
export function writeAvifGrid(layout: GridLayout, tiles: EncodedTile[]): Uint8Array {
  if (tiles.length !== layout.columns * layout.rows || !tiles[0])
    throw new Error(`a ${layout.columns} × ${layout.rows} grid needs as many tiles`);
  const colour = tiles.map((tile) => tile.colour);
  const alpha = tiles.flatMap((tile) => (tile.alpha ? [tile.alpha] : []));
  if (alpha.length !== 0 && alpha.length !== tiles.length) throw new Error("some of a grid's tiles have no alpha");
  checkOneConfiguration(colour);
  const grids = [gridItems(layout, colour, 1)];
  if (alpha.length > 0) {
    checkOneConfiguration(alpha);
    grids.push(gridItems(layout, alpha, colour.length + 2));
  }
  const alphaGridId = alpha.length > 0 ? colour.length + 2 : null;
  const items = grids.flat();
  const fileType = tiles[0].fileType;
  // The meta box's length does not depend on the offsets it holds: measure it once, then write it for real.
  const metaLength = metaBox(items, grids, alphaGridId, 0).length;
  const dataStart = fileType.length + metaLength + 8;
  const payloads = items.map((item) => item.payload);
  const dataLength = payloads.reduce((total, payload) => total + payload.length, 0);
  return concatBytes([
    fileType,
    metaBox(items, grids, alphaGridId, dataStart),
    u32(dataLength + 8),
    encoder.encode("mdat"),
    ...payloads,
  ]);
}
