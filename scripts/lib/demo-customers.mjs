// The customers of the demo fixture (scripts/make-demo-fixture.mjs): Polish names with their gendered
// surnames, and the e-mail addresses people really type.

const MALE_FIRST_NAMES = [
  "Łukasz",
  "Michał",
  "Paweł",
  "Piotr",
  "Tomasz",
  "Krzysztof",
  "Jakub",
  "Mateusz",
  "Bartłomiej",
  "Grzegorz",
  "Wojciech",
  "Jędrzej",
  "Maciej",
  "Kamil",
  "Przemysław",
  "Mikołaj",
  "Stanisław",
  "Rafał",
  "Adam",
  "Sławomir",
];
const FEMALE_FIRST_NAMES = [
  "Zofia",
  "Małgorzata",
  "Agnieszka",
  "Katarzyna",
  "Anna",
  "Magdalena",
  "Joanna",
  "Aleksandra",
  "Ewa",
  "Dorota",
  "Beata",
  "Żaneta",
  "Marta",
  "Natalia",
  "Urszula",
  "Jadwiga",
  "Bożena",
  "Elżbieta",
  "Łucja",
  "Weronika",
];
/** [male form, female form]; many Polish surnames have gendered forms, the rest are the same for both. */
const SURNAMES = [
  ["Nowak", "Nowak"],
  ["Kowalski", "Kowalska"],
  ["Wiśniewski", "Wiśniewska"],
  ["Wójcik", "Wójcik"],
  ["Kowalczyk", "Kowalczyk"],
  ["Kamiński", "Kamińska"],
  ["Lewandowski", "Lewandowska"],
  ["Zieliński", "Zielińska"],
  ["Szymański", "Szymańska"],
  ["Woźniak", "Woźniak"],
  ["Dąbrowski", "Dąbrowska"],
  ["Kozłowski", "Kozłowska"],
  ["Jankowski", "Jankowska"],
  ["Mazur", "Mazur"],
  ["Kaczmarek", "Kaczmarek"],
  ["Piotrowski", "Piotrowska"],
  ["Grabowski", "Grabowska"],
  ["Żółkiewski", "Żółkiewska"],
  ["Pawłowski", "Pawłowska"],
  ["Michalski", "Michalska"],
  ["Król", "Król"],
  ["Wieczorek", "Wieczorek"],
  ["Jabłoński", "Jabłońska"],
  ["Wróbel", "Wróbel"],
  ["Górski", "Górska"],
  ["Stępień", "Stępień"],
  ["Sikora", "Sikora"],
  ["Ostrowski", "Ostrowska"],
  ["Błaszczyk", "Błaszczyk"],
  ["Ślusarczyk", "Ślusarczyk"],
  ["Czyżewski", "Czyżewska"],
  ["Gąsiorowski", "Gąsiorowska"],
];
/** Customers the demo and the docs can search for by name; they always exist in the first store. */
export const FEATURED_CUSTOMERS = [
  "Łukasz Wiśniewski",
  "Zofia Wójcik",
  "Małgorzata Żółkiewska",
  "Michał Dąbrowski",
  "Agnieszka Kaczmarek",
  "Jędrzej Ślusarczyk",
  "Żaneta Gąsiorowska",
];
const EMAIL_DOMAINS = ["example.com", "example.org", "example.net", "poczta.example", "skrzynka.example"];

const ASCII = { ą: "a", ć: "c", ę: "e", ł: "l", ń: "n", ó: "o", ś: "s", ź: "z", ż: "z" };

/** Polish letters to ASCII for e-mail local parts (NFD cannot do ł). */
function asciiFold(text) {
  return [...text.toLowerCase()].map((char) => ASCII[char] ?? char).join("");
}

/** A few e-mail styles people really use, kept unique within a store. */
function emailFor(random, name, taken) {
  const [first, last] = name.split(" ").map(asciiFold);
  const domain = random.pick(EMAIL_DOMAINS);
  const styles = [
    `${first}.${last}`,
    `${first[0]}.${last}`,
    `${first}${last}`,
    `${first}.${last}${random.int(70, 99)}`,
  ];
  let local = random.pick(styles);
  while (taken.has(`${local}@${domain}`)) local = `${local}${random.int(1, 9)}`;
  taken.add(`${local}@${domain}`);
  // A few addresses keep the capitals people typed, so case-insensitive e-mail search has data.
  return random.chance(0.05) ? `${local[0].toUpperCase()}${local.slice(1)}@${domain}` : `${local}@${domain}`;
}

function randomName(random) {
  const female = random.chance(0.55);
  const first = random.pick(female ? FEMALE_FIRST_NAMES : MALE_FIRST_NAMES);
  const [maleSurname, femaleSurname] = random.pick(SURNAMES);
  return `${first} ${female ? femaleSurname : maleSurname}`;
}

/** A store's customer pool: featured names first, then random ones; ~6% have no e-mail on file. */
export function buildCustomers(random, count, featured = []) {
  const taken = new Set();
  const names = [...featured];
  while (names.length < count) names.push(randomName(random));
  return names.map((name) => ({
    id: random.uuid(),
    name,
    email: random.chance(0.06) ? null : emailFor(random, name, taken),
  }));
}
