import { defineConfig } from 'astro/config';
import starlight from '@astrojs/starlight';

export default defineConfig({
  site: 'https://hard.example.invalid',
  base: '/sub',
  integrations: [starlight({ title: 'Hard headings', pagefind: false })],
});
