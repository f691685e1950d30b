"""The folders of the real datasets that named subsets are made of: where each lies under a
data root and what it holds. The loaders read and quote them, :mod:`ib_tutorial.data.subset_build`
writes them; both import them from here, so neither imports the other.
"""

TINY_IMAGENET_FOLDER = "tiny-imagenet-200"
TINY_IMAGENET_REQUIRED = ("wnids.txt", "words.txt", "train", "val/images", "val/val_annotations.txt")
TINY_IMAGENET_LAYOUT = """  <root>/tiny-imagenet-200/
      wnids.txt                      one WordNet id per line: the class order
      words.txt                      <wnid><TAB><names>
      train/<wnid>/images/*.JPEG     500 per class
      val/images/val_<n>.JPEG        all 10,000 in one folder
      val/val_annotations.txt        <file><TAB><wnid><TAB><box>"""

DTD_LAYOUT = """  <root>/dtd/dtd/
      images/<class>/<class>_NNNN.jpg
      labels/{train,val,test}<1..10>.txt    the ten official partitions
  (a folder with images/ but no labels/: pass folder=<that folder> for a stratified split)"""
DTD_FOLDER_LAYOUT = """  <folder>/images/<class>/*.jpg      (labels/ not needed)"""
