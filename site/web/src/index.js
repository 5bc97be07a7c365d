import { initSite } from "./site.js";

initSite();
